-- Extend: reset the lease of each lock that is still ours, and keep its
-- fencing counter for at least another retention, so that it lives as long
-- as the lock. With repair on, also set each lock that is missing here — a
-- node restarted empty, or down when the lock was acquired — and raise its
-- counter to the holding's token, so that a lock does not decay while a
-- majority of nodes is healthy. Never touches another owner's lock.
-- KEYS: per lock (3 each), the lock, its fencing counter and its readers —
-- for a semaphore's permit, which has no readers, its limit record
-- (permit.lua); then, with restart detection on, the start records.
-- ARGV: the prelude's retention and restart (restart detection for
-- repairs; owner, hold and TTL are per lock); then [8] "1" to repair, "0"
-- not to; then per lock from [9] (5 each): kind ("w" a writer, "r" a
-- reader, "p<limit>" a permit), owner, hold id, TTL in ms, fencing token.
-- A writer's lease is the value of its hold's field, and the lock lives as
-- long as its longest live hold (lease_holds); a reader's, the score of its
-- "<owner> <hold>" member of the readers (racquire.lua). As a grant, a
-- repair needs the other kind's absence: a writer is set again only where
-- no live reader is, a reader only where no writer holds the lock. A
-- permit is a writer whose extension or repair also keeps its limit record
-- for at least another retention, so that the record outlives every permit
-- held with it — unless the record names another limit, which is left as
-- it is.
-- Returns one result per lock — 1 extended, 2 set here by repair, 0 not ours
-- — followed, when a lock was repaired and the client must hear when this
-- node started, by start_info's fields. A repaired writer or permit records
-- its TTL in its lock, as a grant does (raise_ttl).
local repair = ARGV[8] == '1'
local locks = math.floor(#KEYS / 3)
trust_key, owner_key = KEYS[3 * locks + 1], KEYS[3 * locks + 2]
local now = now_ms() -- a writer's lease end is now + its TTL
local out = {}
local repaired = false

-- read says whether a live reader holds the lock of readers.
local function read(readers)
  if redis.call('EXISTS', readers) == 0 then return false end
  redis.call('ZREMRANGEBYSCORE', readers, '-inf', now)
  return redis.call('EXISTS', readers) == 1
end

-- A writer's hold is renewed alone: the lock lives as long as the longest
-- live hold of its owner (lease_holds), however short this one's TTL.
local function extend_writer(lock, fence, readers, who, id, px, token)
  local fields = redis.call('HGETALL', lock)
  local held, field, ends = field_of(fields, 'owner'), 'h:' .. id, now + tonumber(px)
  if held == who then
    redis.call('HSET', lock, field, ends)
    lease_holds(lock, now, fields, field, ends)
    counter_renew(fence, tonumber(token))
    return 1
  elseif repair and not held and not (readers and read(readers)) then
    redis.call('HSET', lock, 'owner', who, field, ends, 'ttl', px)
    redis.call('PEXPIRE', lock, px)
    counter_keep(fence, tonumber(token))
    return 2
  end
  return 0
end

local function extend_reader(lock, fence, readers, who, id, px, token)
  local member = who .. ' ' .. id
  local score = redis.call('ZSCORE', readers, member)
  local result
  if score and tonumber(score) > now then
    redis.call('ZADD', readers, 'XX', 'GT', now + tonumber(px), member)
    counter_renew(fence, tonumber(token))
    result = 1
  elseif repair and redis.call('EXISTS', lock) == 0 then
    redis.call('ZADD', readers, now + tonumber(px), member)
    counter_keep(fence, tonumber(token))
    result = 2
  else
    return 0
  end
  if redis.call('PTTL', readers) < tonumber(px) then
    redis.call('PEXPIRE', readers, px)
  end
  return result
end

local function extend_permit(lock, fence, record, limit, who, id, px, token)
  local result = extend_writer(lock, fence, nil, who, id, px, token)
  if result ~= 0 then
    local recorded = redis.call('GET', record)
    if not recorded or recorded == limit then
      set_kept(record, limit, retention)
    end
  end
  return result
end

for i = 1, locks do
  local lock, fence, third = lock_keys(i, 3)
  local kind, who, id, px, token = unpack(ARGV, 5 * i + 4, 5 * i + 8)
  if kind == 'r' then
    out[i] = extend_reader(lock, fence, third, who, id, px, token)
  elseif kind:sub(1, 1) == 'p' then
    out[i] = extend_permit(lock, fence, third, kind:sub(2), who, id, px, token)
  else
    out[i] = extend_writer(lock, fence, third, who, id, px, token)
  end
  repaired = repaired or out[i] == 2
end
if repaired then
  return with_start(out, redis.call('TIME'))
end
return out

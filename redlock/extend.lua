-- Extend: reset the lease of each lock that is still ours, and keep its
-- fencing counter for at least another retention, so that it lives as long
-- as the lock (lease.lua). With repair on, also set each lock that is
-- missing here — a node restarted empty, or down when the lock was
-- acquired — and raise its counter to the holding's token, so that a lock
-- does not decay while a majority of nodes is healthy. Never touches
-- another owner's lock.
-- KEYS: per lock, the lock, its fencing counter and its readers — for a
-- semaphore's permit, which has no readers, its limit record (permit.lua);
-- then, when ARGV[3] is not "", the trust key and, on a cluster member, the
-- slot's owner record (start.lua).
-- ARGV[1] "1" to repair, "0" not to; ARGV[2] the fencing retention in ms;
-- ARGV[3] restart detection for repairs, as acquire.lua's ARGV[7]; then per
-- lock: kind ("w" a writer, "r" a reader, "p<limit>" a permit), owner, hold
-- id, TTL in ms, fencing token. A writer's lease is the value of its
-- hold's field, and the lock lives as long as its longest live hold
-- (lease.lua); a reader's, the score of its "<owner> <hold>" member of the
-- readers (racquire.lua). As a grant, a repair needs the other kind's absence: a
-- writer is set again only where no live reader is, a reader only where no
-- writer holds the lock. A permit is a writer whose extension or repair
-- also keeps its limit record for at least another retention, so that the record
-- outlives every permit held with it — unless the record names another
-- limit, which is left as it is.
-- Returns one result per lock — 1 extended, 2 set here by repair, 0 not ours
-- — followed, when a lock was repaired and the client must hear when this
-- node started, by start_info's fields (start.lua). A repaired writer or
-- permit records its TTL in its lock, as a grant does (raise_ttl).
local repair = ARGV[1] == '1'
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
-- live hold of its owner (lease.lua), however short this one's TTL.
local function extend_writer(lock, fence, readers, owner, hold, ttl, token)
  local fields = redis.call('HGETALL', lock)
  local held, field, ends = field_of(fields, 'owner'), 'h:' .. hold, now + tonumber(ttl)
  if held == owner then
    redis.call('HSET', lock, field, ends)
    lease_holds(lock, now, fields, field, ends)
    counter_renew(fence, tonumber(token), ARGV[2])
    return 1
  elseif repair and not held and not (readers and read(readers)) then
    redis.call('HSET', lock, 'owner', owner, field, ends, 'ttl', ttl)
    redis.call('PEXPIRE', lock, ttl)
    counter_keep(fence, tonumber(token), ARGV[2])
    return 2
  end
  return 0
end

local function extend_reader(lock, fence, readers, owner, hold, ttl, token)
  local member = owner .. ' ' .. hold
  local score = redis.call('ZSCORE', readers, member)
  local result
  if score and tonumber(score) > now then
    redis.call('ZADD', readers, 'XX', 'GT', now + tonumber(ttl), member)
    counter_renew(fence, tonumber(token), ARGV[2])
    result = 1
  elseif repair and redis.call('EXISTS', lock) == 0 then
    redis.call('ZADD', readers, now + tonumber(ttl), member)
    counter_keep(fence, tonumber(token), ARGV[2])
    result = 2
  else
    return 0
  end
  if redis.call('PTTL', readers) < tonumber(ttl) then
    redis.call('PEXPIRE', readers, ttl)
  end
  return result
end

local function extend_permit(lock, fence, record, limit, owner, hold, ttl, token)
  local result = extend_writer(lock, fence, nil, owner, hold, ttl, token)
  if result ~= 0 then
    local recorded = redis.call('GET', record)
    if not recorded or recorded == limit then
      set_kept(record, limit, ARGV[2])
    end
  end
  return result
end

local locks = math.floor(#KEYS / 3)
trust_key, owner_key = KEYS[3 * locks + 1], KEYS[3 * locks + 2]
for i = 1, locks do
  local lock, fence, readers, a = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i], 5 * i - 1
  local kind = ARGV[a]
  if kind == 'r' then
    out[i] = extend_reader(lock, fence, readers, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
  elseif kind:sub(1, 1) == 'p' then
    out[i] = extend_permit(lock, fence, readers, kind:sub(2), ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
  else
    out[i] = extend_writer(lock, fence, readers, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4])
  end
  repaired = repaired or out[i] == 2
end
if repaired then
  local start = start_info(ARGV[3], redis.call('TIME'))
  if start then
    for _, v in ipairs(start) do out[#out + 1] = v end
  end
end
return out

-- Acquire: grant every lock of the attempt if each is free and no live
-- waiter is queued ahead of us on it, or already ours (a hold is added);
-- otherwise grant none. One key is a Lock; several are a LockMany, which
-- takes all of them or none in this one call, so that callers with
-- overlapping sets never hold part of one and wait for the rest.
-- KEYS, per lock (5 each):
--   the lock: a hash with field "owner", one field "h:<hold>" per hold
--   valued its lease end in server ms (lease.lua), and "ttl", the longest
--   TTL it was granted with (start.lua: lease_ttl),
--   the fencing counter,
--   the waiters' queue: a sorted set of owners by ticket (first attempt time)
--   — readers (racquire.lua) wait in it too, as "r:<owner>",
--   the waiters' leases: a sorted set of owners by lease end (server ms),
--   the readers: a sorted set of "<owner> <hold>" by lease end (server ms).
-- A writer is blocked by every live reader, its own owner's too (as
-- sync.RWMutex: a reader that asks to write waits for itself).
-- ARGV[1] owner, ARGV[2] hold id, ARGV[3] TTL in ms,
-- ARGV[4] ticket ("" for a one-shot attempt, which never queues), ARGV[5] queue lease in ms,
-- ARGV[6] the fencing state's retention in ms.
-- ARGV[7] restart detection: "" off; else the node's LASTSAVE as this client
-- last saw it, or "?" if it cannot rely on one yet (start.lua). With it on,
-- one more KEY follows the locks' own: the trust key (start.lua), and on a
-- cluster member one more: the slot's owner record (start.lua: owner_key).
-- Returns {1, token per lock...} when granted, followed by start_info's
-- fields when the grant must say when its node started (start.lua); {0,
-- remaining TTL in ms} when refused: the longest among the locks held by
-- others or the readers' longest (0 when they are free but a waiter is ahead),
-- followed as a grant by start_info's fields. Each grant records its TTL
-- in its lock (field "ttl", raise_ttl), for clients meeting restarted nodes.
local n = math.floor(#KEYS / 5)
trust_key, owner_key = KEYS[5 * n + 1], KEYS[5 * n + 2]
local hold = 'h:' .. ARGV[2]

-- longest is the TTL record this node reports: the longest among the locks,
-- -1 if any is unknown (start.lua: lease_ttl).
local function longest()
  local m = 0
  for i = 1, n do
    local v = lease_ttl(KEYS[5 * i - 4], KEYS[5 * i])
    if v < 0 then return -1 end
    m = math.max(m, v)
  end
  return m
end

local function wait_in_line(i)
  if ARGV[4] == '' then return end
  local queue, leases = KEYS[5 * i - 2], KEYS[5 * i - 1]
  local lease = now_ms() + tonumber(ARGV[5])
  redis.call('ZADD', queue, 'NX', ARGV[4], ARGV[1])
  redis.call('ZADD', leases, lease, ARGV[1])
  redis.call('PEXPIRE', queue, ARGV[5])
  redis.call('PEXPIRE', leases, ARGV[5])
end

-- blocked says whether lock i stops the grant: held by another owner, read
-- by a live reader, or free with a live waiter ahead of us; and the
-- holder's (or the readers' longest) remaining lease.
local function blocked(i)
  local lock, queue, leases, readers = KEYS[5 * i - 4], KEYS[5 * i - 2], KEYS[5 * i - 1], KEYS[5 * i]
  local owner = redis.call('HGET', lock, 'owner')
  if owner == ARGV[1] then return false, 0 end
  if owner then return true, redis.call('PTTL', lock) end
  if redis.call('EXISTS', readers) == 1 then
    -- Readers whose lease ran out are gone (Redis has no per-member TTL).
    local now = now_ms()
    redis.call('ZREMRANGEBYSCORE', readers, '-inf', now)
    local last = redis.call('ZRANGE', readers, -1, -1, 'WITHSCORES')
    if last[2] then return true, tonumber(last[2]) - now end
  end
  if redis.call('EXISTS', queue) == 1 then
    forget_dead(queue, leases)
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if head and head ~= ARGV[1] then return true, 0 end
  end
  return false, 0
end

local refused, pttl = false, 0
for i = 1, n do
  local b, left = blocked(i)
  if b then
    refused, pttl = true, math.max(pttl, left)
  end
end
if refused then
  -- Wait in line on every lock not ours: tickets order every queue the
  -- same way, so the oldest waiter is first on all of its locks and waits
  -- only for holders, never for another waiter (no deadlock).
  for i = 1, n do
    if redis.call('HGET', KEYS[5 * i - 4], 'owner') ~= ARGV[1] then wait_in_line(i) end
  end
  return refusal(pttl, ARGV[7], longest)
end

local t = redis.call('TIME')
local ends = server_ms(t) + tonumber(ARGV[3])
local out = {1}
local record = 0
for i = 1, n do
  local lock, fence = KEYS[5 * i - 4], KEYS[5 * i - 3]
  if redis.call('HGET', lock, 'owner') == ARGV[1] then
    -- A re-sent attempt (its reply was lost) or a nested hold of the same
    -- owner: the same hold id is the same field, so a re-send never counts
    -- twice. The lock lives as long as its longest live hold; the token is
    -- the counter, kept as long (lease.lua).
    redis.call('HSET', lock, hold, ends)
    record = math.max(record, raise_ttl(lock, ARGV[3]))
    lease_holds(lock, server_ms(t))
    out[i + 1] = counter_held(fence, t, ARGV[6])
  else
    -- A grant keeps the waiter's place in line: if the attempt fails on the
    -- other nodes and is undone, it must still be first here next time, or
    -- two waiters that split the nodes would swap places forever. Unlock
    -- removes it.
    redis.call('HSET', lock, 'owner', ARGV[1], hold, ends, 'ttl', ARGV[3])
    record = math.max(record, tonumber(ARGV[3]))
    redis.call('PEXPIRE', lock, ARGV[3])
    -- The token is the larger of the counter + 1 and this node's clock in
    -- microseconds: it grows with the counter while the fencing state lives,
    -- and with the clock once it expired or was lost in an empty restart.
    local token = math.max(tonumber(redis.call('GET', fence) or '0') + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
    redis.call('SET', fence, string.format('%d', token), 'PX', ARGV[6])
    out[i + 1] = token
  end
end
-- A client meeting this node's process for the first time hears when it
-- started (a replica holding a copy of our key answers here too).
local start = start_info(ARGV[7], t, function() return record end)
if start then
  for _, v in ipairs(start) do out[#out + 1] = v end
end
return out

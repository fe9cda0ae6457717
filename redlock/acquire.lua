-- Acquire: grant every lock of the attempt if each is free and no live
-- waiter is queued ahead of us on it, or already ours (a hold is added);
-- otherwise grant none. One key is a Lock; several are a LockMany, which
-- takes all of them or none in this one call, so that callers with
-- overlapping sets never hold part of one and wait for the rest.
-- KEYS, per lock (5 each, lock_keys):
--   the lock: a hash with field "owner", one field "h:<hold>" per hold
--   valued its lease end in server ms (prelude: lease_holds), and "ttl",
--   the longest TTL it was granted with (lease_ttl),
--   the fencing counter,
--   the waiters' queue: a sorted set of owners by ticket (first attempt time)
--   — readers (racquire.lua) wait in it too, as "r:<owner>",
--   the waiters' leases: a sorted set of owners by lease end (server ms),
--   the readers: a sorted set of "<owner> <hold>" by lease end (server ms);
-- then the start records (prelude: trust_key, owner_key).
-- A writer is blocked by every live reader, its own owner's too (as
-- sync.RWMutex: a reader that asks to write waits for itself).
-- ARGV: the prelude's owner, hold, ttl, retention, restart, ticket,
-- queue_lease; no others.
-- Returns {g, token per lock...} when granted, g 2 when every token came
-- from the node's clock (a free key's grant whose counter + 1 was not
-- larger: next_token), 1 otherwise (a counter's value, or a nested hold's);
-- the client needs no write-back for a clock-derived token near its own
-- (fence.go: coverWindow). The tokens are followed by start_info's fields
-- when the grant must say when its node started; {0, remaining TTL
-- in ms} when refused: the longest among the locks held by others or the
-- readers' longest (0 when they are free but a waiter is ahead), followed
-- as a grant by start_info's fields. Each grant records its TTL in its
-- lock (field "ttl", raise_ttl), for clients meeting restarted nodes.
-- Without a lock, a reader or a waiter on any key (the common case) the
-- checks cost one EXISTS.
local n = math.floor(#KEYS / 5)
trust_key, owner_key = KEYS[5 * n + 1], KEYS[5 * n + 2]
local field = 'h:' .. hold

-- longest is the TTL record this node reports: the longest among the locks,
-- -1 if any is unknown (lease_ttl).
local function longest()
  local m = 0
  for i = 1, n do
    local lock, _, _, _, readers = lock_keys(i, 5)
    local v = lease_ttl(lock, readers)
    if v < 0 then return -1 end
    m = math.max(m, v)
  end
  return m
end

-- held[i] is lock i's owner here, false if none: read once.
local held = {}

-- busy says whether any lock, readers or waiters' queue of the attempt
-- exists: if none does, every lock is free and no one waits.
local function busy()
  local names = {}
  for i = 1, n do
    local lock, _, queue, _, readers = lock_keys(i, 5)
    names[#names + 1], names[#names + 2], names[#names + 3] = lock, queue, readers
    held[i] = false
  end
  return redis.call('EXISTS', unpack(names)) > 0
end

-- blocked says whether lock i stops the grant: held by another owner, read
-- by a live reader, or free with a live waiter ahead of us; and the
-- holder's (or the readers' longest) remaining lease.
local function blocked(i)
  local lock, _, queue, leases, readers = lock_keys(i, 5)
  held[i] = redis.call('HGET', lock, 'owner') or false
  if held[i] == owner then return false, 0 end
  if held[i] then return true, redis.call('PTTL', lock) end
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
    if head and head ~= owner then return true, 0 end
  end
  return false, 0
end

if busy() then
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
      local lock, _, queue, leases = lock_keys(i, 5)
      if held[i] ~= owner then join_line(queue, leases, owner) end
    end
    return with_start({0, pttl}, nil, longest)
  end
end

local t = redis.call('TIME')
local ends = server_ms(t) + tonumber(ttl)
local out = {2}
local record = 0
for i = 1, n do
  local lock, fence = lock_keys(i, 5)
  if held[i] == owner then
    -- A re-sent attempt (its reply was lost) or a nested hold of the same
    -- owner: the same hold id is the same field, so a re-send never counts
    -- twice. The lock lives as long as its longest live hold; the token is
    -- the counter, kept as long.
    redis.call('HSET', lock, field, ends)
    record = math.max(record, raise_ttl(lock, ttl))
    lease_holds(lock, server_ms(t))
    out[i + 1], out[1] = counter_held(fence, t), 1
  else
    -- A grant keeps the waiter's place in line: if the attempt fails on the
    -- other nodes and is undone, it must still be first here next time, or
    -- two waiters that split the nodes would swap places forever. Unlock
    -- removes it.
    redis.call('HSET', lock, 'owner', owner, field, ends, 'ttl', ttl)
    record = math.max(record, tonumber(ttl))
    redis.call('PEXPIRE', lock, ttl)
    local token, clock = next_token(fence, t)
    out[i + 1] = token
    if not clock then out[1] = 1 end
  end
end
-- A client meeting this node's process for the first time hears when it
-- started (a replica holding a copy of our key answers here too).
return with_start(out, t, function() return record end)

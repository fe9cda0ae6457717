-- RAcquire: grant a shared hold (RLock) of one lock if no writer holds it
-- and no live writer waits ahead of us — or another hold of our owner
-- reads here already (a nested reader); otherwise refuse, and wait in line.
-- KEYS: as acquire.lua's for one lock — the lock, the fencing counter, the
-- waiters' queue, its leases, the readers; the trust key (and on a
-- cluster member the slot's owner record) with restart
-- detection on (start.lua).
-- ARGV as acquire.lua's: [1] owner, [2] hold id, [3] TTL in ms, [4] ticket
-- ("" for a one-shot attempt, which never queues), [5] queue lease in ms,
-- [6] the fencing retention in ms: a reader issues no token, but keeps
-- the counter it reads for at least that long (lease.lua),
-- [7] restart detection.
-- A reader is the member "<owner> <hold>" of the readers, scored by its
-- lease end in server ms (Redis 7.0 has no per-member TTL); the set's TTL
-- is kept at least as long as its longest lease. It waits in the queue as
-- "r:<owner>", in ticket order with the writers: a writer behind it waits
-- for it, and it waits for every writer ahead of it — so a stream of
-- readers cannot starve a writer.
-- Returns {1, the fencing counter} when granted — the token of the last
-- writer, or where the counter expired the node's clock in µs, which is
-- larger (lease.lua) — followed by start_info's fields
-- as acquire.lua; {0, the writer's remaining TTL in ms} when refused (0
-- when a writer waits ahead), followed as acquire.lua's by start_info's.
-- Readers record no TTL (start.lua: lease_ttl); a node reports the
-- writer's, which is what a reader waits for.
local lock, fence, queue, leases, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
trust_key, owner_key = KEYS[6], KEYS[7]
local waiter = 'r:' .. ARGV[1]
local reader = ARGV[1] .. ' ' .. ARGV[2]

local function wait_in_line()
  if ARGV[4] == '' then return end
  redis.call('ZADD', queue, 'NX', ARGV[4], waiter)
  redis.call('ZADD', leases, now_ms() + tonumber(ARGV[5]), waiter)
  redis.call('PEXPIRE', queue, ARGV[5])
  redis.call('PEXPIRE', leases, ARGV[5])
end

-- writer_ahead says whether a live writer waits ahead of us: for a
-- one-shot attempt, anywhere in line. A queued reader takes (or refreshes)
-- its place first; it keeps it when granted, as a writer does, so that a
-- grant undone after the attempt failed elsewhere leaves it first here
-- next time. Unlock removes it.
local function writer_ahead()
  if redis.call('EXISTS', queue) == 0 then return false end
  forget_dead(queue, leases)
  local ahead
  if ARGV[4] == '' then
    ahead = redis.call('ZRANGE', queue, 0, -1)
  else
    wait_in_line()
    local rank = redis.call('ZRANK', queue, waiter)
    if rank == 0 then return false end
    ahead = redis.call('ZRANGE', queue, 0, rank - 1)
  end
  for _, m in ipairs(ahead) do
    if string.sub(m, 1, 2) ~= 'r:' then return true end
  end
  return false
end

-- owner_reads says whether another live hold of our owner reads here: a
-- nested reader, granted at once even while a writer waits — the writer
-- waits for the owner's first read, so that read's owner must not wait
-- for it. A member is "<owner> <hold>", and a hold id has no space.
local function owner_reads()
  local prefix = ARGV[1] .. ' '
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', readers, '(' .. now_ms(), '+inf')) do
    if string.sub(m, 1, #prefix) == prefix and not string.find(m, ' ', #prefix + 1, true) then
      return true
    end
  end
  return false
end

if redis.call('EXISTS', lock) == 1 then
  wait_in_line()
  return refusal(redis.call('PTTL', lock), ARGV[7], function() return lease_ttl(lock) end)
end
-- A re-sent attempt (its reply was lost) is granted again: it is ours.
local mine = redis.call('ZSCORE', readers, reader)
if not (mine and tonumber(mine) > now_ms()) and writer_ahead() and not owner_reads() then
  return refusal(0, ARGV[7], function() return lease_ttl(lock) end)
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', readers, 'GT', now + tonumber(ARGV[3]), reader)
if redis.call('PTTL', readers) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', readers, ARGV[3])
end
local out = {1, counter_held(fence, t, ARGV[6])}
local start = start_info(ARGV[7], t, function() return lease_ttl(lock) end)
if start then
  for _, v in ipairs(start) do out[#out + 1] = v end
end
return out

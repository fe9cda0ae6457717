-- RAcquire: grant a shared hold (RLock) of one lock if no writer holds it
-- and no live writer waits ahead of us — or another hold of our owner
-- reads here already (a nested reader); otherwise refuse, and wait in line.
-- KEYS: as acquire.lua's for one lock — the lock, the fencing counter, the
-- waiters' queue, its leases, the readers — then the start records.
-- ARGV: the prelude's, as acquire.lua's. A reader issues no token, but
-- keeps the counter it reads for at least the retention.
-- A reader is the member "<owner> <hold>" of the readers, scored by its
-- lease end in server ms (Redis 7.0 has no per-member TTL); the set's TTL
-- is kept at least as long as its longest lease. It waits in the queue as
-- "r:<owner>", in ticket order with the writers: a writer behind it waits
-- for it, and it waits for every writer ahead of it — so a stream of
-- readers cannot starve a writer.
-- Returns {1, token} when granted — the larger of the fencing counter (the
-- token of the last writer that left) and the node's clock in µs
-- (counter_read) — followed by start_info's fields
-- as acquire.lua; {0, the writer's remaining TTL in ms} when refused (0
-- when a writer waits ahead), followed as acquire.lua's by start_info's.
-- Readers record no TTL (lease_ttl); a node reports the
-- writer's, which is what a reader waits for.
local lock, fence, queue, leases, readers = lock_keys(1, 5)
trust_key, owner_key = KEYS[6], KEYS[7]
local waiter = 'r:' .. owner
local reader = owner .. ' ' .. hold

-- writer_ahead says whether a live writer waits ahead of us: for a
-- one-shot attempt, anywhere in line. A queued reader takes (or refreshes)
-- its place first; it keeps it when granted, as a writer does, so that a
-- grant undone after the attempt failed elsewhere leaves it first here
-- next time. Unlock removes it.
local function writer_ahead()
  if redis.call('EXISTS', queue) == 0 then return false end
  forget_dead(queue, leases)
  local ahead
  if ticket == '' then
    ahead = redis.call('ZRANGE', queue, 0, -1)
  else
    join_line(queue, leases, waiter)
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
  local prefix = owner .. ' '
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', readers, '(' .. now_ms(), '+inf')) do
    if string.sub(m, 1, #prefix) == prefix and not string.find(m, ' ', #prefix + 1, true) then
      return true
    end
  end
  return false
end

local function longest() return lease_ttl(lock) end

if redis.call('EXISTS', lock) == 1 then
  join_line(queue, leases, waiter)
  return with_start({0, redis.call('PTTL', lock)}, nil, longest)
end
-- A re-sent attempt (its reply was lost) is granted again: it is ours.
local mine = redis.call('ZSCORE', readers, reader)
if not (mine and tonumber(mine) > now_ms()) and writer_ahead() and not owner_reads() then
  return with_start({0, 0}, nil, longest)
end

local t = redis.call('TIME')
redis.call('ZADD', readers, 'GT', server_ms(t) + tonumber(ttl), reader)
if redis.call('PTTL', readers) < tonumber(ttl) then
  redis.call('PEXPIRE', readers, ttl)
end
return with_start({1, counter_read(fence, t)}, t, longest)

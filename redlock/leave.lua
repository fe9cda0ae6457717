-- Leave the waiters' queues: a Lock that gave up, or that won on other nodes.
-- Where a lock is free, announce its new first waiter, who may take it now.
-- KEYS, per lock (5 each, as acquire.lua's): the lock, the fencing counter
-- (unused), the queue, the queue's leases, the readers (unused).
-- ARGV: the prelude's owner; then [8] "r" for a reader (whose member of
-- the queues is "r:<owner>"), "" for a writer (its owner); then per lock
-- its channel (KeyNames.Channel), from [9].
-- Returns how many queues the owner left.
local member = ARGV[8] == 'r' and 'r:' .. owner or owner
local left = 0
for i = 1, #KEYS / 5 do
  local lock, _, queue, leases = lock_keys(i, 5)
  if redis.call('ZREM', queue, member) == 1 then
    left = left + 1
    redis.call('ZREM', leases, member)
    if redis.call('EXISTS', lock) == 0 then announce_first(queue, ARGV[8 + i]) end
  end
end
return left

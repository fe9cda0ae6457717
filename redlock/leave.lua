-- Leave the waiters' queues: a Lock that gave up, or that won on other nodes.
-- Where a lock is free, announce its new first waiter, who may take it now.
-- KEYS, per lock (4 each, the first of acquire.lua's): the lock, the
-- fencing counter (unused), the queue, the queue's leases.
-- ARGV: the prelude's owner; then [8] "r" for a reader (whose member of
-- the queues is "r:<owner>"), "" for a writer (its owner); then per lock
-- its channel (KeyNames.Channel), from [9].
-- Returns how many queues the owner left.
local member = ARGV[8] == 'r' and 'r:' .. owner or owner
local left = 0
for i = 1, #KEYS / 4 do
  local lock, _, queue, leases = lock_keys(i, 4)
  if redis.call('ZREM', queue, member) == 1 then
    left = left + 1
    redis.call('ZREM', leases, member)
    if redis.call('EXISTS', lock) == 0 then announce_first(queue, ARGV[8 + i]) end
  end
end
return left

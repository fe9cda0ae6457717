-- Leave the waiters' queues: a Lock that gave up, or that won on other nodes.
-- Where a lock is free, announce its new first waiter, who may take it now.
-- KEYS, per lock (3 each): the queue, the queue's leases, the lock.
-- ARGV[1] the owner's member of the queues (its owner; "r:<owner>" for a
-- reader), then per lock its channel (KeyNames.Channel).
-- Returns how many queues the owner left.
local left = 0
for i = 1, #KEYS / 3 do
  local queue, leases, lock = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  if redis.call('ZREM', queue, ARGV[1]) == 1 then
    left = left + 1
    redis.call('ZREM', leases, ARGV[1])
    if redis.call('EXISTS', lock) == 0 then
      local head = redis.call('ZRANGE', queue, 0, 0)[1]
      if head then
        if string.sub(head, 1, 2) == 'r:' then head = '' end -- a reader: wake them all
        redis.call('PUBLISH', ARGV[1 + i], head)
      end
    end
  end
end
return left

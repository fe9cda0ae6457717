-- Leave the waiters' queue: a Lock that gave up, or that won on other nodes.
-- If the lock is free, announce the new first waiter, who may take it now.
-- KEYS[1] the queue, KEYS[2] the queue's leases, KEYS[3] the lock.
-- ARGV[1] owner, ARGV[2] the channel to announce on.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[3]) == 0 then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if head then
    redis.call('PUBLISH', ARGV[2], head)
  end
end
return 1

-- RRelease: drop a shared hold (RLock), compare-by-value: only our own
-- "<owner> <hold>" member of the readers is removed, never another's.
-- KEYS: as racquire.lua's — the lock, the fencing counter, the waiters'
-- queue, its leases, the readers.
-- ARGV: the prelude's owner, hold and retention; then [8] "1" for an
-- Unlock, "" to undo a failed attempt (silently, keeping its place in
-- line), [9] the holding's token (raised onto the counter, as release.lua
-- does; 0 for none), [10] the lock's channel.
-- An Unlock also takes "r:<owner>" out of the queue and, when the last live
-- reader is gone and no writer holds the lock, announces the first in line
-- (announce_first).
-- Returns 1 when our hold was there, 0 when it was not.
local lock, fence, queue, leases, readers = lock_keys(1, 5)
local unlock, token, channel = ARGV[8] == '1', ARGV[9], ARGV[10]
raise_counter(fence, token)
local ours = redis.call('ZREM', readers, owner .. ' ' .. hold)
if not unlock or redis.call('EXISTS', queue) == 0 then
  return ours
end
local waiter = 'r:' .. owner
if redis.call('ZREM', queue, waiter) == 1 then
  redis.call('ZREM', leases, waiter)
end
if redis.call('EXISTS', lock) == 1 then
  return ours
end
redis.call('ZREMRANGEBYSCORE', readers, '-inf', now_ms())
if redis.call('EXISTS', readers) == 0 then
  announce_first(queue, channel)
end
return ours

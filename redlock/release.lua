-- Release: compare-and-delete; never touches another owner's lock.
-- KEYS[1] the lock, KEYS[2] the fencing counter, KEYS[3] the waiters' queue,
-- KEYS[4] its leases.
-- ARGV[1] owner, ARGV[2] hold id, ARGV[3] "1" to release the whole lock, "0"
-- to drop only this hold (the lock is deleted when no hold is left),
-- ARGV[4] the channel to announce a freed lock on, when waiters are queued
-- (the message names the first in line, so that only it need wake); "" not
-- to announce (undoing a failed attempt must not wake its own waiter),
-- ARGV[5] the fencing state's retention in ms, ARGV[6] the holding's fencing
-- token: every node that answers raises its counter to it, so that a node
-- restarted empty later cannot hand out a smaller one.
-- Returns 1 when our hold was there and the lock is now free, 2 when our hold
-- was dropped but other holds of the same owner remain, 0 when the lock was not ours.
-- An Unlock (ARGV[4] set) also takes the owner out of the waiters' queue —
-- on every node it reaches, granted or not — so that the next in line is
-- first everywhere.
-- Without waiters (the common case) the queue costs one EXISTS.
local queued = ARGV[4] ~= '' and redis.call('EXISTS', KEYS[3]) == 1
if queued and redis.call('ZREM', KEYS[3], ARGV[1]) == 1 then
  redis.call('ZREM', KEYS[4], ARGV[1])
end
local token = tonumber(ARGV[6])
if token > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') < token then
  redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[5])
end
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
if ARGV[3] ~= '1' then
  redis.call('HDEL', KEYS[1], 'h:' .. ARGV[2])
  if redis.call('HLEN', KEYS[1]) > 1 then
    return 2
  end
end
redis.call('DEL', KEYS[1])
if queued then
  local first = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if first then
    redis.call('PUBLISH', ARGV[4], first)
  end
end
return 1

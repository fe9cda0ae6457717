-- RRelease: drop a shared hold (RLock), compare-by-value: only our own
-- "<owner> <hold>" member of the readers is removed, never another's.
-- KEYS: as racquire.lua's — the lock, the fencing counter, the waiters'
-- queue, its leases, the readers.
-- ARGV[1] owner, ARGV[2] hold id, ARGV[3] "1" for an Unlock, "" to undo a
-- failed attempt (silently, keeping its place in line), ARGV[4] the fencing
-- retention in ms, ARGV[5] the holding's token (raised onto the counter, as
-- release.lua does; 0 for none), ARGV[6] the lock's channel.
-- An Unlock also takes "r:<owner>" out of the queue and, when the last live
-- reader is gone and no writer holds the lock, announces the first in line:
-- its owner, or "" (every waiter wakes) when it is a reader.
-- Returns 1 when our hold was there, 0 when it was not.
local lock, fence, queue, leases, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local token = tonumber(ARGV[5])
if token > 0 and tonumber(redis.call('GET', fence) or '0') < token then
  set_kept(fence, string.format('%d', token), ARGV[4])
end
local ours = redis.call('ZREM', readers, ARGV[1] .. ' ' .. ARGV[2])
if ARGV[3] ~= '1' or redis.call('EXISTS', queue) == 0 then
  return ours
end
local waiter = 'r:' .. ARGV[1]
if redis.call('ZREM', queue, waiter) == 1 then
  redis.call('ZREM', leases, waiter)
end
if redis.call('EXISTS', lock) == 1 then
  return ours
end
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', readers, '-inf', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
if redis.call('EXISTS', readers) == 0 then
  local first = redis.call('ZRANGE', queue, 0, 0)[1]
  if first then
    if string.sub(first, 1, 2) == 'r:' then first = '' end
    redis.call('PUBLISH', ARGV[6], first)
  end
end
return ours

-- Fence write-back: raise each fencing counter KEYS[i] to at least ARGV[i];
-- never lower one, nor shorten its expiry. Each is a counter a grant of
-- this acquisition has just set or kept for at least the retention
-- (lease.lua): it keeps its expiry (KEEPTTL). One found missing after all
-- (its node lost it meanwhile) is set with ARGV[#KEYS + 1], the retention
-- in ms.
-- Returns the number of counters raised.
local retention = ARGV[#KEYS + 1]
local raised = 0
for i, key in ipairs(KEYS) do
  local counter = redis.call('GET', key)
  if not counter then
    redis.call('SET', key, ARGV[i], 'PX', retention)
    raised = raised + 1
  elseif tonumber(counter) < tonumber(ARGV[i]) then
    redis.call('SET', key, ARGV[i], 'KEEPTTL')
    raised = raised + 1
  end
end
return raised

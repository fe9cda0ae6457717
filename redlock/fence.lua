-- Fence write-back: raise the fencing counter to at least ARGV[1]; never lower it.
-- KEYS[1] the fencing counter. ARGV[2] its retention in ms.
-- Returns the counter's value afterwards.
local want = tonumber(ARGV[1])
local have = tonumber(redis.call('GET', KEYS[1]) or '0')
if have < want then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return want
end
return have

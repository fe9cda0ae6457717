-- Fence write-back: raise each fencing counter KEYS[i] to at least ARGV[i];
-- never lower one, nor shorten its expiry: ARGV[#KEYS + 1] is the least
-- retention in ms (lease.lua).
-- Returns the number of counters raised.
local retention = ARGV[#KEYS + 1]
local raised = 0
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') < tonumber(ARGV[i]) then
    set_kept(key, ARGV[i], retention)
    raised = raised + 1
  end
end
return raised

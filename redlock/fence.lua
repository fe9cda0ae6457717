-- Fence write-back: raise each fencing counter KEYS[i] to at least
-- ARGV[7 + i]; never lower one, nor shorten its expiry (raise_counter).
-- Each is a counter a grant of this acquisition has just set or kept for
-- at least the retention; one found missing after all (its node lost it
-- meanwhile) is set for the retention.
-- ARGV: the prelude's retention; then per key its token, from [8].
-- Returns the number of counters raised.
local raised = 0
for i, fence in ipairs(KEYS) do
  if raise_counter(fence, ARGV[7 + i]) then raised = raised + 1 end
end
return raised

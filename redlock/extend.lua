-- Extend: reset the lease only if the lock is still ours; never recreate it.
-- KEYS[1] the lock. ARGV[1] owner, ARGV[2] TTL in milliseconds.
-- Returns 1 when extended, 0 when the lock is gone or another owner's.
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0

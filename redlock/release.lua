-- Release: compare-and-delete. Never touches another owner's lock.
-- KEYS[1] the lock. ARGV[1] owner, ARGV[2] hold id,
-- ARGV[3] "1" to release the whole lock, "0" to drop only this hold (the lock
-- is deleted when no hold is left).
-- Returns 1 when our hold was there and the lock is now free, 2 when our hold
-- was dropped but other holds of the same owner remain, 0 when the lock was not ours.
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
return 1

-- Acquire: set the lock if it is free, or add a hold if it is already ours.
-- KEYS[1] the lock (a hash: field "owner", one field per hold), KEYS[2] the fencing counter.
-- ARGV[1] owner, ARGV[2] hold id, ARGV[3] TTL in milliseconds.
-- Returns {1, fencing token} when granted, {0, remaining TTL in ms} when held by another owner.
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'h:' .. ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1, redis.call('INCR', KEYS[2])}
end
if owner == ARGV[1] then
  -- A re-sent attempt (its reply was lost) or a nested hold: the same hold id
  -- is the same field, so a re-send never counts twice. Never shorten the lease.
  redis.call('HSET', KEYS[1], 'h:' .. ARGV[2], 1)
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
  return {1, tonumber(redis.call('GET', KEYS[2]) or '0')}
end
return {0, redis.call('PTTL', KEYS[1])}

-- Acquire: grant the lock if it is free and no live waiter is queued ahead of
-- us, or add a hold if it is already ours.
-- KEYS[1] the lock: a hash with field "owner" and one field "h:<hold>" per hold
-- KEYS[2] the fencing counter
-- KEYS[3] the waiters' queue: a sorted set of owners by ticket (first attempt time)
-- KEYS[4] the waiters' leases: a sorted set of owners by lease end (server ms)
-- ARGV[1] owner, ARGV[2] hold id, ARGV[3] TTL in ms,
-- ARGV[4] ticket ("" for a one-shot attempt, which never queues), ARGV[5] queue lease in ms,
-- ARGV[6] the fencing state's retention in ms.
-- ARGV[7] restart detection: "" off; else the node's LASTSAVE as this client
-- last saw it, or "?" if it cannot rely on one yet (start.lua).
-- Returns {1, fencing token} when granted, or {1, token, start_info...} when
-- the grant must say when its node started (start.lua); {0, remaining TTL in
-- ms} when refused (0 when the lock is free but a waiter is ahead).
local owner = redis.call('HGET', KEYS[1], 'owner')
local hold = 'h:' .. ARGV[2]
local queued = redis.call('EXISTS', KEYS[3]) == 1

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function wait_in_line()
  if ARGV[4] == '' then return end
  local lease = now_ms() + tonumber(ARGV[5])
  redis.call('ZADD', KEYS[3], 'NX', ARGV[4], ARGV[1])
  redis.call('ZADD', KEYS[4], lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
  redis.call('PEXPIRE', KEYS[4], ARGV[5])
end

if owner == ARGV[1] then
  -- A re-sent attempt (its reply was lost) or a nested hold of the same
  -- owner: the same hold id is the same field, so a re-send never counts
  -- twice. Never shorten the lease.
  redis.call('HSET', KEYS[1], hold, 1)
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
  end
  -- A client meeting this node's process for the first time hears when it
  -- started here too (a replica holding a copy of our key answers here).
  local token = tonumber(redis.call('GET', KEYS[2]) or '0')
  local start = start_info(ARGV[7], redis.call('TIME'))
  if start then
    return {1, token, unpack(start)}
  end
  return {1, token}
end

if not owner then
  if queued then
    -- Forget waiters whose lease ran out (they gave up or crashed).
    local dead = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now_ms())
    if #dead > 0 then
      redis.call('ZREM', KEYS[3], unpack(dead))
      redis.call('ZREM', KEYS[4], unpack(dead))
    end
    local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if head and head ~= ARGV[1] then
      wait_in_line()
      return {0, 0}
    end
  end
  -- A grant keeps the waiter's place in line: if the attempt fails on the
  -- other nodes and is undone, it must still be first here next time, or two
  -- waiters that split the nodes would swap places forever. Unlock removes it.
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], hold, 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  -- The token is the larger of the counter + 1 and this node's clock in
  -- microseconds: it grows with the counter while the fencing state lives,
  -- and with the clock once it expired or was lost in an empty restart.
  local t = redis.call('TIME')
  local token = math.max(tonumber(redis.call('GET', KEYS[2]) or '0') + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
  redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[6])
  local start = start_info(ARGV[7], t)
  if start then
    return {1, token, unpack(start)}
  end
  return {1, token}
end

wait_in_line()
return {0, redis.call('PTTL', KEYS[1])}

-- Permit: grant one free permit of a semaphore of L permits, each a lock
-- like acquire.lua's, if no live waiter needs it first; or the permit this
-- owner already holds here (a re-sent attempt, or a nested hold).
-- KEYS: the L permits' locks (hashes: "owner", one "h:<hold>" per hold,
-- valued its lease end: lease.lua, and "ttl" as acquire.lua's),
-- then their L fencing counters, then the semaphore's waiters' queue (a
-- sorted set of owners by ticket), its leases (owners by lease end, server
-- ms), and its limit record (the limit its holders were granted with); the
-- trust key with restart detection on, and on a cluster member the slot's
-- owner record (start.lua).
-- ARGV[1] owner, ARGV[2] hold id, ARGV[3] TTL in ms, ARGV[4] ticket ("" for
-- a one-shot attempt, which never queues), ARGV[5] queue lease in ms,
-- ARGV[6] the fencing state's retention in ms, ARGV[7] the limit L, ARGV[8]
-- the permit to try first (0-based; the search wraps around, so that
-- clients starting at different permits spread, and nodes in one state pick
-- the same), ARGV[9] the permits' common name prefix (permit j is that
-- followed by j), for reading the permits of another recorded limit,
-- ARGV[10] restart detection, as acquire.lua's ARGV[7].
-- Returns {1, token, permit, start_info...} when granted (its TTL recorded
-- in the permit, raise_ttl); {0, the shortest remaining lease of the
-- permits held by others, start_info...} when refused (0 when a permit is
-- free but live waiters ahead of us need every free one); {-1,
-- recorded limit} when holders of another limit hold a permit here — nothing
-- is written then.
local L = tonumber(ARGV[7])
local queue, leases, record = KEYS[2 * L + 1], KEYS[2 * L + 2], KEYS[2 * L + 3]
trust_key, owner_key = KEYS[2 * L + 4], KEYS[2 * L + 5]

-- The limit is the holders': another one is refused while any permit of
-- the recorded limit is held here.
local recorded = tonumber(redis.call('GET', record) or '0')
if recorded > 0 and recorded ~= L then
  for j = 0, recorded - 1 do
    if redis.call('EXISTS', ARGV[9] .. j) == 1 then return {-1, recorded} end
  end
end

local held, mine, shortest = 0, nil, 0
for j = 1, L do
  local owner = redis.call('HGET', KEYS[j], 'owner')
  if owner == ARGV[1] then
    mine = j
  elseif owner then
    held = held + 1
    local left = redis.call('PTTL', KEYS[j])
    if shortest == 0 or (left > 0 and left < shortest) then shortest = left end
  end
end

local t = redis.call('TIME')
local function granted(j, token)
  local out = {1, token, j - 1}
  local start = start_info(ARGV[10], t, function() return lease_ttl(KEYS[j]) end)
  if start then
    for _, v in ipairs(start) do out[#out + 1] = v end
  end
  return out
end

local ends = server_ms(t) + tonumber(ARGV[3])
if mine then
  -- The same hold id is the same field: a re-send never counts twice. The
  -- permit lives as long as its owner's longest live hold; the token is
  -- the counter, kept as long (lease.lua).
  redis.call('HSET', KEYS[mine], 'h:' .. ARGV[2], ends)
  raise_ttl(KEYS[mine], ARGV[3])
  lease_holds(KEYS[mine], server_ms(t))
  return granted(mine, counter_held(KEYS[L + mine], t, ARGV[6]))
end

-- Live waiters ahead of us take the free permits first: a waiter's rank in
-- the queue (ticket order) must be below the number of free permits. A
-- one-shot attempt ranks behind every waiter.
local ahead
if redis.call('EXISTS', queue) == 1 then forget_dead(queue, leases) end
if ARGV[4] == '' then
  ahead = redis.call('ZCARD', queue)
else
  redis.call('ZADD', queue, 'NX', ARGV[4], ARGV[1])
  ahead = redis.call('ZRANK', queue, ARGV[1])
end
if ahead >= L - held then
  if ARGV[4] ~= '' then
    redis.call('ZADD', leases, now_ms() + tonumber(ARGV[5]), ARGV[1])
    redis.call('PEXPIRE', queue, ARGV[5])
    redis.call('PEXPIRE', leases, ARGV[5])
  end
  if held < L then shortest = 0 end
  return refusal(shortest, ARGV[10], function()
    local m = 0
    for j = 1, L do
      local v = lease_ttl(KEYS[j])
      if v < 0 then return -1 end
      m = math.max(m, v)
    end
    return m
  end)
end

-- A free permit, from the one to try first. The waiter leaves the queue: a
-- grant undone later puts it back with the same ticket, at the same place.
local first = tonumber(ARGV[8]) % L
for k = 0, L - 1 do
  local j = (first + k) % L + 1
  if redis.call('EXISTS', KEYS[j]) == 0 then
    if ARGV[4] ~= '' then
      redis.call('ZREM', queue, ARGV[1])
      redis.call('ZREM', leases, ARGV[1])
    end
    redis.call('HSET', KEYS[j], 'owner', ARGV[1], 'h:' .. ARGV[2], ends, 'ttl', ARGV[3])
    redis.call('PEXPIRE', KEYS[j], ARGV[3])
    local fence = KEYS[L + j]
    local token = math.max(tonumber(redis.call('GET', fence) or '0') + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
    redis.call('SET', fence, string.format('%d', token), 'PX', ARGV[6])
    -- Other permits' holders may rely on the record for longer.
    set_kept(record, L, ARGV[6])
    return granted(j, token)
  end
end
return redis.error_reply('permit.lua: no free permit though ' .. held .. ' of ' .. L .. ' are held')

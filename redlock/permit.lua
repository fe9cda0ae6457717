-- Permit: grant one free permit of a semaphore of L permits, each a lock
-- like acquire.lua's, if no live waiter needs it first; or the permit this
-- owner already holds here (a re-sent attempt, or a nested hold).
-- KEYS: the L permits' locks (hashes: "owner", one "h:<hold>" per hold,
-- valued its lease end, and "ttl" as acquire.lua's), then their L fencing
-- counters, then the semaphore's waiters' queue (a sorted set of owners by
-- ticket), its leases (owners by lease end, server ms), and its limit
-- record (the limit its holders were granted with); then the start
-- records.
-- ARGV: the prelude's; then [8] the limit L, [9] the permit to try first
-- (0-based; the search wraps around, so that clients starting at
-- different permits spread, and nodes in one state pick the same), [10]
-- the permits' common name prefix (permit j is that followed by j), for
-- reading the permits of another recorded limit.
-- Returns {1, token, permit, start_info...} when granted (its TTL recorded
-- in the permit, raise_ttl); {0, the shortest remaining lease of the
-- permits held by others, start_info...} when refused (0 when a permit is
-- free but live waiters ahead of us need every free one); {-1, recorded
-- limit} when holders of another limit hold a permit here — nothing is
-- written then. Either start_info's TTL record covers every permit.
local L, prefer, permit_prefix = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
local queue, leases, record = KEYS[2 * L + 1], KEYS[2 * L + 2], KEYS[2 * L + 3]
trust_key, owner_key = KEYS[2 * L + 4], KEYS[2 * L + 5]

-- The limit is the holders': another one is refused while any permit of
-- the recorded limit is held here.
local recorded = tonumber(redis.call('GET', record) or '0')
if recorded > 0 and recorded ~= L then
  for j = 0, recorded - 1 do
    if redis.call('EXISTS', permit_prefix .. j) == 1 then return {-1, recorded} end
  end
end

local held, mine, shortest = 0, nil, 0
for j = 1, L do
  local holder = redis.call('HGET', KEYS[j], 'owner')
  if holder == owner then
    mine = j
  elseif holder then
    held = held + 1
    local left = redis.call('PTTL', KEYS[j])
    if shortest == 0 or (left > 0 and left < shortest) then shortest = left end
  end
end

-- longest is the TTL record this node reports, refusing or granting: the
-- longest among every permit held here (-1 if any is unknown, lease_ttl),
-- not the granted one's alone. A node may grant one permit while it holds
-- another's lease that a restarted node lost (issue 25): a guard short of
-- that lease would count the restarted node's grant of the lost permit.
local function longest()
  local m = 0
  for j = 1, L do
    local v = lease_ttl(KEYS[j])
    if v < 0 then return -1 end
    m = math.max(m, v)
  end
  return m
end

local t = redis.call('TIME')
local function granted(j, token)
  return with_start({1, token, j - 1}, t, longest)
end

local ends = server_ms(t) + tonumber(ttl)
if mine then
  -- The same hold id is the same field: a re-send never counts twice. The
  -- permit lives as long as its owner's longest live hold; the token is
  -- the counter, kept as long.
  redis.call('HSET', KEYS[mine], 'h:' .. hold, ends)
  raise_ttl(KEYS[mine], ttl)
  lease_holds(KEYS[mine], server_ms(t))
  return granted(mine, counter_held(KEYS[L + mine], t))
end

-- Live waiters ahead of us take the free permits first: a waiter's rank in
-- the queue (ticket order) must be below the number of free permits. A
-- one-shot attempt ranks behind every waiter.
local ahead
if redis.call('EXISTS', queue) == 1 then forget_dead(queue, leases) end
if ticket == '' then
  ahead = redis.call('ZCARD', queue)
else
  redis.call('ZADD', queue, 'NX', ticket, owner)
  ahead = redis.call('ZRANK', queue, owner)
end
if ahead >= L - held then
  join_line(queue, leases, owner)
  if held < L then shortest = 0 end
  return with_start({0, shortest}, nil, longest)
end

-- A free permit, from the one to try first. The waiter leaves the queue: a
-- grant undone later puts it back with the same ticket, at the same place.
for k = 0, L - 1 do
  local j = (prefer % L + k) % L + 1
  if redis.call('EXISTS', KEYS[j]) == 0 then
    if ticket ~= '' then
      redis.call('ZREM', queue, owner)
      redis.call('ZREM', leases, owner)
    end
    redis.call('HSET', KEYS[j], 'owner', owner, 'h:' .. hold, ends, 'ttl', ttl)
    redis.call('PEXPIRE', KEYS[j], ttl)
    local token = next_token(KEYS[L + j], t)
    -- Other permits' holders may rely on the record for longer.
    set_kept(record, L, retention)
    return granted(j, token)
  end
end
return redis.error_reply('permit.lua: no free permit though ' .. held .. ' of ' .. L .. ' are held')

-- start_info: what a reply says about when its node started, for restart
-- detection. last is this client's LASTSAVE for the node ("" detection off;
-- "?" none to rely on yet, or the client asks every node's TTL record);
-- now is the reply of TIME, or nil to read it here; longest, when given, a
-- function returning the lock's TTL record (note_ttl). Returns nil when
-- nothing need be said (detection off, or LASTSAVE as the client last saw
-- it); else {uptime in s, run_id, LASTSAVE, time in s, vouched 1|0, role,
-- TTL record in ms}, or {-1, why} when the node cannot tell. LASTSAVE, reset
-- when a node starts (and by each save), costs next to nothing; the dearer
-- INFO server is asked only when it differs from what the client last saw.
local function start_info(last, now, longest)
  if last == '' then return nil end
  local saved = redis.pcall('LASTSAVE')
  if type(saved) == 'number' and tostring(saved) == last then return nil end
  local info = redis.pcall('INFO', 'server')
  if type(info) ~= 'string' then
    return {-1, 'INFO server refused: ' .. tostring(type(info) == 'table' and info.err or info)}
  end
  local uptime, run_id = string.match(info, 'uptime_in_seconds:(%d+)'), string.match(info, 'run_id:(%x+)')
  if not (uptime and run_id) then
    return {-1, 'INFO server has no uptime_in_seconds or run_id'}
  end
  if type(saved) ~= 'number' then saved = '' end
  now = now or redis.call('TIME')
  -- An operator may vouch that this process started with no lease to forget
  -- (TrustStart): its run_id under a fixed key.
  local vouched = redis.pcall('GET', 'quorumlock:trusted-start') == run_id and 1 or 0
  -- A node that (re)started as a replica must not vote: its role, while
  -- INFO is being asked anyway ("" if the section cannot be read).
  local repl = redis.pcall('INFO', 'replication')
  local role = type(repl) == 'string' and string.match(repl, 'role:(%a+)') or ''
  return {tonumber(uptime), run_id, tostring(saved), tostring(now[1]), vouched, role, longest and longest() or 0}
end

-- note_ttl records, beside a lock, the longest TTL granted or renewed on it
-- here that may still be in use (<lock>:ttl, in ms, under the lock's hash
-- tag): a lease of ttl lives at most ttl after this call, and the record of
-- it at least that long — kept for three TTLs, so that renewals (every
-- third of one) mostly only read it. Returns the record. A client that
-- meets a restarted node asks the others for it (ttl_record): a lease the
-- node lost cannot outlive its start by more than its TTL (doc.go,
-- "Restarts").
local function note_ttl(lock, ttl)
  ttl = tonumber(ttl)
  local key = lock .. ':ttl'
  local had = tonumber(redis.call('GET', key) or '0')
  if had < ttl then
    redis.call('SET', key, ttl, 'PX', 3 * ttl)
    return ttl
  end
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, 3 * ttl) end
  return had
end

-- keep_ttl is note_ttl for a renewal: the record already covers the lease
-- (its grant noted it, and a record never shrinks while a lease it covers
-- lives), so it is only read, and noted again once less than a TTL is left.
local function keep_ttl(lock, ttl)
  if redis.call('PTTL', lock .. ':ttl') < tonumber(ttl) then note_ttl(lock, ttl) end
end

-- ttl_record is the longest TTL recorded beside any of locks (0 if none).
local function ttl_record(locks)
  local longest = 0
  for _, lock in ipairs(locks) do
    longest = math.max(longest, tonumber(redis.call('GET', lock .. ':ttl') or '0'))
  end
  return longest
end

-- refusal is a refusal's reply {0, hint}, followed — when the client must
-- hear when this node started (start_info) — by the TTL record of locks and
-- start_info's fields.
local function refusal(hint, last, locks)
  local start = start_info(last, nil, function() return ttl_record(locks) end)
  if not start then return {0, hint} end
  local out = {0, hint}
  for _, v in ipairs(start) do out[#out + 1] = v end
  return out
end


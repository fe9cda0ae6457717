-- start_info: what a reply says about when its node started, for restart
-- detection. last is this client's LASTSAVE for the node ("" detection off;
-- "?" none to rely on yet), prefixed with "+" when the client also asks for
-- the TTL record of the locks (while one of its nodes is young); now is the
-- reply of TIME, or nil to read it here; longest, when given, a function
-- returning that record (lease_ttl). Returns nil when nothing need be said
-- (detection off, or LASTSAVE as the client last saw it, no record asked);
-- {-2, TTL record in ms} when only the record is; else {uptime in s,
-- run_id, LASTSAVE, time in s, vouched 1|0, role, TTL record in ms}, or
-- {-1, why} when the node cannot tell. On a cluster member the first two
-- forms end with the answering server's node ID and how long it has served
-- the keys' slot (served_ms), and {-3, node ID, served} stands for nil. LASTSAVE, reset when a node starts (and by each save), costs
-- next to nothing; the dearer INFO server is asked only when it differs
-- from what the client last saw.
-- trust_key is the key of the TrustStart record that covers this script's
-- keys (TrustKey on a plain master; on a cluster, the record of the keys'
-- slot), declared in KEYS after the script's own when restart detection is
-- on; each script sets it. nil: no record is read.
local trust_key

-- owner_key is, on a cluster member, the record of which primary serves
-- the keys' slot, and since when: a hash {by = node ID, repl = its
-- master_replid, since = server ms}, declared in KEYS after the trust key;
-- nil on a plain master. It never expires (one per slot).
local owner_key

-- served_ms returns how long, in ms, the server id has served the slot of
-- owner_key as the primary it is now — the record's age while it names
-- this server and its replication ID. A replica promoted (CLUSTER FAILOVER,
-- TAKEOVER) and a restart give the server a new replication ID, a slot
-- moved here brings another server's record: the record then starts again
-- from now, or from the process's start for a server that has been a
-- primary since it started (second_repl_offset -1) and brought no other
-- server's record. TrustStart writes the record with since 0.
local function served_ms(id)
  local repl = redis.pcall('INFO', 'replication')
  if type(repl) ~= 'string' then return nil, 'INFO replication refused' end
  local replid = string.match(repl, 'master_replid:(%x+)')
  if not replid then return nil, 'INFO replication has no master_replid' end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local rec = redis.call('HMGET', owner_key, 'by', 'repl', 'since')
  if rec[1] == id and rec[2] == replid and tonumber(rec[3]) then
    return now - tonumber(rec[3])
  end
  local since = now
  if (not rec[1] or rec[1] == id) and string.match(repl, 'second_repl_offset:(%-?%d+)') == '-1' then
    local info = redis.pcall('INFO', 'server')
    local up = type(info) == 'string' and tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
    if up then since = now - up * 1000 end
  end
  redis.call('HSET', owner_key, 'by', id, 'repl', replid, 'since', since)
  return now - since
end

local function start_info(last, now, longest)
  if last == '' then return nil end
  local record = string.sub(last, 1, 1) == '+'
  if record then last = string.sub(last, 2) end
  -- On a cluster member (last "@id:LASTSAVE,..."), the client keeps a start
  -- per server: pick this server's LASTSAVE, and name the server (its node
  -- ID) in every reply.
  local id
  if string.sub(last, 1, 1) == '@' then
    id = redis.pcall('CLUSTER', 'MYID')
    if type(id) ~= 'string' then id = '' end
    local at = id ~= '' and string.find(last, id .. ':', 2, true)
    last = at and string.match(last, '^(%d+)', at + #id + 1) or '?'
  end
  local served
  if id and owner_key then
    local why
    served, why = served_ms(id)
    if not served then return {-1, why} end
  end
  local saved = redis.pcall('LASTSAVE')
  if type(saved) == 'number' and tostring(saved) == last then
    if record then return {-2, longest and longest() or 0, id, served} end
    if id then return {-3, id, served} end
    return nil
  end
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
  -- (TrustStart): its run_id under the trust key.
  local vouched = trust_key and redis.pcall('GET', trust_key) == run_id and 1 or 0
  -- A node that (re)started as a replica must not vote: its role, while
  -- INFO is being asked anyway ("" if the section cannot be read).
  local repl = redis.pcall('INFO', 'replication')
  local role = type(repl) == 'string' and string.match(repl, 'role:(%a+)') or ''
  return {tonumber(uptime), run_id, tostring(saved), tostring(now[1]), vouched, role, longest and longest() or 0, id, served}
end

-- A lock records in its field "ttl" the longest TTL (ms) among the holds
-- it was granted or repaired with, for clients meeting restarted nodes: a
-- lease a node lost cannot outlive the node's start by more than its TTL
-- (doc.go, "Restarts"). The field lives and dies with the lock. raise_ttl
-- raises it to ttl for a hold added to a lock already held, and returns it.
local function raise_ttl(lock, ttl)
  local had = tonumber(redis.call('HGET', lock, 'ttl') or '0')
  if had >= tonumber(ttl) then return had end
  redis.call('HSET', lock, 'ttl', ttl)
  return tonumber(ttl)
end

-- lease_ttl is the longest TTL recorded by what holds lock here: its "ttl"
-- field; -1 (unknown, read as MaxRestartGuard) when live readers hold it —
-- readers record none; pass readers only where they count — or when the
-- lock was written by a version that recorded none; 0 when nothing holds it.
local function lease_ttl(lock, readers)
  if readers then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if redis.call('ZCOUNT', readers, '(' .. now, '+inf') > 0 then return -1 end
  end
  local ttl = redis.call('HGET', lock, 'ttl')
  if ttl then return tonumber(ttl) end
  return redis.call('EXISTS', lock) == 1 and -1 or 0
end

-- refusal is a refusal's reply {0, hint}, followed — when the client must
-- hear when this node started (start_info) — by start_info's fields, with
-- longest() as the TTL record.
local function refusal(hint, last, longest)
  local start = start_info(last, nil, longest)
  if not start then return {0, hint} end
  local out = {0, hint}
  for _, v in ipairs(start) do out[#out + 1] = v end
  return out
end

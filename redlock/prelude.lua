-- prelude: the head of every script (scripts.go prepends it). It names
-- the arguments every script takes, in one order, and holds the helpers
-- the scripts share. A script names its own arguments and keys at its top.
--
-- ARGV, in every script (one it does not use is sent as "" or 0):
--   [1] owner, [2] hold id, [3] TTL in ms, [4] the fencing state's
--   retention in ms, [5] restart detection (restart_off; else the node's
--   LASTSAVE as this client last saw it, or restart_unknown if it cannot
--   rely on one yet: start_info), [6] ticket ("" for a one-shot attempt,
--   which never queues), [7] the waiters' queue lease in ms; the script's
--   own from [8].
-- KEYS: the script's own; then, with restart detection on, the records
-- start_info reads: the trust record and, on a cluster member, the slot's
-- owner record (trust_key, owner_key: each script sets them).
local owner, hold, ttl, retention, restart, ticket, queue_lease =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]

-- lock_keys returns the keys of lock i of a script that takes per keys
-- for each lock.
local function lock_keys(i, per)
  return unpack(KEYS, per * (i - 1) + 1, per * i)
end

-- Time. Leases and lease ends are the server's times in ms.

-- server_ms is TIME's reply t in ms.
local function server_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function now_ms()
  return server_ms(redis.call('TIME'))
end

-- The waiters' line: a queue (a sorted set of members by ticket) and its
-- leases (members by lease end). A writer's member is its owner, a
-- reader's "r:<owner>".

-- forget_dead drops from a queue and its leases the waiters whose lease
-- ran out (they gave up or crashed), so that they block no one.
local function forget_dead(queue, leases)
  local dead = redis.call('ZRANGEBYSCORE', leases, '-inf', now_ms())
  if #dead > 0 then
    redis.call('ZREM', queue, unpack(dead))
    redis.call('ZREM', leases, unpack(dead))
  end
end

-- join_line puts member in line with this attempt's ticket (keeping an
-- earlier place) and renews its lease; a one-shot attempt never queues.
local function join_line(queue, leases, member)
  if ticket == '' then return end
  redis.call('ZADD', queue, 'NX', ticket, member)
  redis.call('ZADD', leases, now_ms() + tonumber(queue_lease), member)
  redis.call('PEXPIRE', queue, queue_lease)
  redis.call('PEXPIRE', leases, queue_lease)
end

-- announce_first publishes on channel the first waiter of queue, who may
-- take the lock now: its owner, or "" (every waiter wakes) for a reader,
-- so that the readers behind it come in together.
local function announce_first(queue, channel)
  local first = redis.call('ZRANGE', queue, 0, 0)[1]
  if not first then return end
  if string.sub(first, 1, 2) == 'r:' then first = '' end
  redis.call('PUBLISH', channel, first)
end

-- Holds. A lock is a hash: "owner", and per hold of that owner a field
-- "h:<hold>" whose value is the hold's lease end in the node's ms. The
-- lock's own expiry is the latest lease end among its live holds, so that
-- a hold with a short TTL never cuts the lease of a longer one of the same
-- owner (WithOwner), whichever is granted, renewed or released first.

-- A hold field below legacy_hold is no lease end in ms (those are about
-- 1.8e12 today) but an older version's mark.
local legacy_hold = 1e11

-- field_of is the value of field name in fields, an HGETALL reply.
local function field_of(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end

-- lease_holds sets lock's expiry to the latest lease end among its holds
-- at server time now (ms), dropping the holds whose lease ended. fields is
-- the lock's HGETALL reply, or nil to read it; a hold field just written
-- with lease end ends, if given, overrides what fields say of it. With no
-- live hold left it deletes the lock and returns false.
local function lease_holds(lock, now, fields, field, ends)
  fields = fields or redis.call('HGETALL', lock)
  local last, dead = ends or 0, {}
  for i = 1, #fields, 2 do
    local f = fields[i]
    if string.sub(f, 1, 2) == 'h:' and f ~= field then
      local e = tonumber(fields[i + 1]) or 0
      if e < legacy_hold then
        -- Written by a version that recorded no lease end ("1"): it may
        -- rely on the lock's expiry as it stands.
        e = now + math.max(redis.call('PTTL', lock), 0)
      end
      if e > now then last = math.max(last, e) else dead[#dead + 1] = f end
    end
  end
  if last <= now then
    redis.call('DEL', lock)
    return false
  end
  if #dead > 0 then redis.call('HDEL', lock, unpack(dead)) end
  redis.call('PEXPIREAT', lock, last)
  return true
end

-- Fencing counters. A counter lives as long as anything holds its key and
-- a retention more: renewals, raises and grants to a key already held
-- never shorten its expiry (the first grant of a free key sets it afresh:
-- every earlier hold has ended), and a key that has none (it expired,
-- untouched for a retention, or was lost in an empty restart) reads as
-- the node's clock in µs, above every token issued a retention before.

-- set_kept sets key to value for at least px ms, never for less than the
-- time it has left (a key without expiry keeps none).
local function set_kept(key, value, px)
  local left = redis.call('PTTL', key)
  if left == -1 then
    redis.call('SET', key, value, 'KEEPTTL')
  else
    redis.call('SET', key, value, 'PX', math.max(tonumber(px), left))
  end
end

-- keep_for keeps key for at least px ms: never shortens its expiry (a key
-- without expiry keeps none; a missing key stays missing).
local function keep_for(key, px)
  local left = redis.call('PTTL', key)
  if left >= 0 and left < tonumber(px) then redis.call('PEXPIRE', key, px) end
end

-- next_token issues the token of a grant of a free key: the larger of its
-- counter + 1 and the node's clock in µs (TIME's reply t), so that it
-- grows with the counter while the fencing state lives and with the clock
-- once that expired or was lost. The counter is set to it for the
-- retention. It returns the token and whether it is the clock's (the
-- counter was below it): one SET ... GET then, the common case.
local function next_token(fence, t)
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local was = tonumber(redis.call('SET', fence, string.format('%d', clock), 'PX', retention, 'GET') or '0')
  if was < clock then return clock, true end
  redis.call('SET', fence, string.format('%d', was + 1), 'PX', retention)
  return was + 1, false
end

-- raise_counter raises the counter fence to token, kept for at least the
-- retention, if it is below it (a missing counter is); it lowers nothing
-- and shortens no expiry. It returns whether it raised the counter.
local function raise_counter(fence, token)
  if tonumber(token) <= 0 or tonumber(redis.call('GET', fence) or '0') >= tonumber(token) then
    return false
  end
  set_kept(fence, string.format('%d', token), retention)
  return true
end

-- counter_keep raises the counter fence to at least token and keeps it
-- for at least the retention: it lowers neither.
local function counter_keep(fence, token)
  if not raise_counter(fence, token) then keep_for(fence, retention) end
end

-- counter_renew keeps the counter fence of a renewed hold for at least the
-- retention; where it is missing (deleted, or left by an older version to
-- expire) it sets it to the holding's token. A counter there is not read
-- again: it is at least the token (the write-back, or a grant of the token
-- itself), or it is a clock-derived grant's within fence.go's coverWindow of
-- it, which needs none while the hold lives (docs/SAFETY.md, "Tokens
-- without a write-back round"). Cheaper than counter_keep on the
-- watchdog's path.
local function counter_renew(fence, token)
  local left = redis.call('PTTL', fence)
  if left == -2 then
    redis.call('SET', fence, string.format('%d', token), 'PX', retention)
  elseif left >= 0 and left < tonumber(retention) then
    redis.call('PEXPIRE', fence, retention)
  end
end

-- counter_held is the counter fence for a hold that issues no token of its
-- own here — a nested hold, a re-sent attempt: its value, or where it has
-- none the node's clock in µs from TIME's reply t — either way at least
-- every token a live or recently live holder uses: the owner's own grant
-- here set it, after every earlier holding left this node — kept for at
-- least the retention.
local function counter_held(fence, t)
  local value = tonumber(redis.call('GET', fence) or '0')
  if value > 0 then
    keep_for(fence, retention)
    return value
  end
  value = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', fence, string.format('%d', value), 'PX', retention)
  return value
end

-- counter_read is a reader's token: the larger of the counter fence and
-- the node's clock in µs from TIME's reply t, stored as the counter and
-- kept for at least the retention. Either is at least the token of every
-- writer that left this node's key before: its release raised the counter
-- to its token, and a lease that ran out here ended after the node's clock
-- passed the grant's token by the TTL, which a token left without a
-- write-back is within half of (docs/SAFETY.md, "Tokens without a
-- write-back round"). A reader finds no fresh grant of its own in between,
-- as a writer's does (next_token).
local function counter_read(fence, t)
  local value = tonumber(redis.call('GET', fence) or '0')
  local clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if value >= clock then
    keep_for(fence, retention)
    return value
  end
  set_kept(fence, string.format('%d', clock), retention)
  return clock
end

-- Restarts (docs/SAFETY.md, "Restarts"): what a reply says about when its node
-- started.
-- start_info: what a reply says about when its node started, for restart
-- detection. last is this client's LASTSAVE for the node (restart_off:
-- detection off; restart_unknown: none to rely on yet), prefixed with
-- restart_record when the client also asks for the TTL record of the
-- locks (while one of its nodes is young); now is the reply of TIME, or
-- nil to read it here; longest, when given, a function returning that
-- record (lease_ttl). Returns nil when nothing need be said
-- (detection off, or LASTSAVE as the client last saw it, no record asked);
-- {-2, TTL record in ms} when only the record is; else {uptime in s,
-- run_id, LASTSAVE, time in s, vouched 1|0, role, TTL record in ms}, or
-- {-1, why} when the node cannot tell. On a cluster member the first two
-- forms end with the answering server's node ID and how long it has served
-- the keys' slot (served_ms), and {-3, node ID, served} stands for nil.
-- LASTSAVE, reset when a node starts (and by each save), costs next to
-- nothing; the dearer INFO server is asked only when it differs
-- from what the client last saw.
-- trust_key is the key of the TrustStart record that covers this script's
-- keys (TrustKey on a plain master; on a cluster, the record of the keys'
-- slot); nil: no record is read.
local trust_key

-- owner_key is, on a cluster member, the record of which primary serves
-- the keys' slot, and since when: a hash {by = node ID, repl = its
-- master_replid, epoch = its config epoch, since = server ms}, declared in
-- KEYS after the trust key; on a Sentinel member, the master's record
-- (master_served_ms); nil on a plain master. It never expires (one per
-- slot, or per master).
local owner_key

-- info_field is field of an INFO (or CLUSTER INFO) reply text, or nil.
local function info_field(text, field)
  return type(text) == 'string' and string.match(text, field .. ':(%-?%w+)') or nil
end

-- served_ms returns how long, in ms, the server id has served the slot of
-- owner_key as the primary it is now (docs/SHARDS.md, "Failovers and moved
-- slots"). The record's age, while it names this server and its
-- replication ID — the common path. A new replication ID with the record
-- still naming this server and its config epoch is the same primary's
-- term: its ID rotated (a backlog freed after repl-backlog-ttl without a
-- replica) or its process restarted (which its start covers), and the
-- record keeps its since. Every promotion of a replica (CLUSTER FAILOVER,
-- FORCE or TAKEOVER, or an election) gives it a new config epoch, so a
-- server promoted again after a term as a replica starts anew. A record
-- naming another server (a slot moved here, a failover) starts again from
-- now; a missing one too, but from the process's start on a server that
-- has been a primary since it started: no second replication ID and no
-- replication stream ever received (INFO stats). TrustStart writes the
-- record with since 0.
local function served_ms(id)
  local repl = redis.pcall('INFO', 'replication')
  local replid = info_field(repl, 'master_replid')
  if not replid then return nil, 'INFO replication refused or has no master_replid' end
  local now = now_ms()
  local rec = redis.call('HMGET', owner_key, 'by', 'repl', 'since', 'epoch')
  if rec[1] == id and rec[2] == replid and tonumber(rec[3]) then
    return now - tonumber(rec[3])
  end
  local epoch = info_field(redis.pcall('CLUSTER', 'INFO'), 'cluster_my_epoch')
  if not epoch then return nil, 'CLUSTER INFO refused or has no cluster_my_epoch' end
  local since = now
  if rec[1] == id and rec[4] == epoch and tonumber(rec[3]) then
    since = tonumber(rec[3])
  elseif not rec[1] and info_field(repl, 'second_repl_offset') == '-1'
      and info_field(redis.pcall('INFO', 'stats'), 'total_net_repl_input_bytes') == '0' then
    local up = tonumber(info_field(redis.pcall('INFO', 'server'), 'uptime_in_seconds'))
    if up then since = now - up * 1000 end
  end
  redis.call('HSET', owner_key, 'by', id, 'repl', replid, 'epoch', epoch, 'since', since)
  return now - since
end

-- master_served_ms returns how long, in ms, the master of a Sentinel
-- member has served as the master it is now (docs/SHARDS.md, "Sentinel members"),
-- and whether its record was written anew. owner_key is then the master's
-- record {by = run_id, repl = master_replid, input =
-- total_net_repl_input_bytes, since = server ms}. The record's age while it
-- names this master's replication ID — the common path. Under another ID,
-- the record keeps its since if it names this process (run_id), the same
-- replication input (none received since: the process was no replica
-- since it wrote the record) and the ID was rotated, not shifted by a
-- promotion (second_repl_offset -1: a backlog freed after
-- repl-backlog-ttl). A record naming another process, or missing, starts
-- again from now — from the process's start only when it is missing on a
-- master that never replicated (no second ID, no replication input).
local function master_served_ms()
  local repl = redis.pcall('INFO', 'replication')
  local replid = info_field(repl, 'master_replid')
  if not replid then return nil, 'INFO replication refused or has no master_replid' end
  local now = now_ms()
  local rec = redis.call('HMGET', owner_key, 'by', 'repl', 'since', 'input')
  if rec[2] == replid and tonumber(rec[3]) then return now - tonumber(rec[3]), false end
  local server = redis.pcall('INFO', 'server')
  local run_id = info_field(server, 'run_id')
  local input = info_field(redis.pcall('INFO', 'stats'), 'total_net_repl_input_bytes')
  if not (run_id and input) then return nil, 'INFO server or stats refused, or without run_id or total_net_repl_input_bytes' end
  local rotated = info_field(repl, 'second_repl_offset') == '-1'
  local since = now
  if rec[1] == run_id and rec[4] == input and rotated and tonumber(rec[3]) then
    since = tonumber(rec[3])
  elseif not rec[1] and rotated and input == '0' then
    since = now - tonumber(info_field(server, 'uptime_in_seconds') or '0') * 1000
  end
  redis.call('HSET', owner_key, 'by', run_id, 'repl', replid, 'input', input, 'since', since)
  return now - since, true
end

-- The restart argument's sigils (callargs.go names them alike):
-- restart_off, detection off; restart_unknown, no LASTSAVE to rely on
-- yet; restart_record before the rest, the TTL record asked too;
-- restart_cluster, a cluster member's form: then "<node ID>:<LASTSAVE>,"
-- per server, restart_id_end ending each node ID.
local restart_off, restart_unknown, restart_record, restart_cluster, restart_id_end =
  '', '?', '+', '@', ':'

local function start_info(last, now, longest)
  if last == restart_off then return nil end
  local record = string.sub(last, 1, 1) == restart_record
  if record then last = string.sub(last, 2) end
  -- On a cluster member (last "@id:LASTSAVE,..."), the client keeps a start
  -- per server: pick this server's LASTSAVE, and name the server (its node
  -- ID) in every reply.
  local id
  if string.sub(last, 1, 1) == restart_cluster then
    id = redis.pcall('CLUSTER', 'MYID')
    if type(id) ~= 'string' then id = '' end
    local at = id ~= '' and string.find(last, id .. restart_id_end, 2, true)
    last = at and string.match(last, '^(%d+)', at + #id + 1) or restart_unknown
  end
  local served, anew
  if id and owner_key then
    local why
    served, why = served_ms(id)
    if not served then return {-1, why} end
  elseif owner_key then
    -- A Sentinel member: one server at a time, named ""; a master written
    -- anew reports its start in full (it may be another process whose
    -- LASTSAVE reads the same).
    local why
    id = ''
    served, why = master_served_ms()
    if not served then return {-1, why} end
    anew = why
  end
  local saved = redis.pcall('LASTSAVE')
  if not anew and type(saved) == 'number' and tostring(saved) == last then
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
-- (docs/SAFETY.md, "Restarts"). The field lives and dies with the lock. raise_ttl
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
  if readers and redis.call('ZCOUNT', readers, '(' .. now_ms(), '+inf') > 0 then
    return -1
  end
  local ttl = redis.call('HGET', lock, 'ttl')
  if ttl then return tonumber(ttl) end
  return redis.call('EXISTS', lock) == 1 and -1 or 0
end

-- with_start appends to out, a reply, start_info's fields (time t, TTL
-- record longest()) when the client must hear when this node started.
local function with_start(out, t, longest)
  local start = start_info(restart, t, longest)
  if start then
    for _, v in ipairs(start) do out[#out + 1] = v end
  end
  return out
end


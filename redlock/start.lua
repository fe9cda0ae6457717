-- start_info: what a grant says about when its node started, for restart
-- detection. last is this client's LASTSAVE for the node ("" detection off;
-- "?" none to rely on yet); now is the reply of TIME. Returns nil when
-- nothing need be said (detection off, or LASTSAVE as the client last saw
-- it); else {uptime in s, run_id, LASTSAVE, time in s, vouched 1|0, role}, or
-- {-1, why} when the node cannot tell. LASTSAVE, reset when a node starts
-- (and by each save), costs next to nothing; the dearer INFO server is asked
-- only when it differs from what the client last saw.
local function start_info(last, now)
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
  -- An operator may vouch that this process started with no lease to forget
  -- (TrustStart): its run_id under a fixed key.
  local vouched = redis.pcall('GET', 'quorumlock:trusted-start') == run_id and 1 or 0
  -- A node that (re)started as a replica must not vote: its role, while
  -- INFO is being asked anyway ("" if the section cannot be read).
  local repl = redis.pcall('INFO', 'replication')
  local role = type(repl) == 'string' and string.match(repl, 'role:(%a+)') or ''
  return {tonumber(uptime), run_id, tostring(saved), tostring(now[1]), vouched, role}
end


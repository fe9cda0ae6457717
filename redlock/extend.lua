-- Extend: reset the lease of each lock that is still ours. With repair on,
-- also set each lock that is missing here — a node restarted empty, or down
-- when the lock was acquired — and raise its fencing counter to the
-- holding's token, so that a lock does not decay while a majority of nodes
-- is healthy. Never touches another owner's lock.
-- KEYS: per lock, the lock and its fencing counter.
-- ARGV[1] "1" to repair, "0" not to; ARGV[2] the fencing retention in ms;
-- ARGV[3] restart detection for repairs, as acquire.lua's ARGV[7]; then per
-- lock: owner, hold id, TTL in ms, fencing token.
-- Returns one result per lock — 1 extended, 2 set here by repair, 0 not ours
-- — followed, when a lock was repaired and the client must hear when this
-- node started, by start_info's fields (start.lua).
local repair = ARGV[1] == '1'
local out = {}
local repaired = false
for i = 1, #KEYS / 2 do
  local lock, fence, a = KEYS[2 * i - 1], KEYS[2 * i], 4 * i
  local owner = redis.call('HGET', lock, 'owner')
  if owner == ARGV[a] then
    redis.call('PEXPIRE', lock, ARGV[a + 2])
    out[i] = 1
  elseif repair and not owner then
    redis.call('HSET', lock, 'owner', ARGV[a], 'h:' .. ARGV[a + 1], 1)
    redis.call('PEXPIRE', lock, ARGV[a + 2])
    if tonumber(redis.call('GET', fence) or '0') < tonumber(ARGV[a + 3]) then
      redis.call('SET', fence, ARGV[a + 3], 'PX', ARGV[2])
    end
    out[i] = 2
    repaired = true
  else
    out[i] = 0
  end
end
if repaired then
  local start = start_info(ARGV[3], redis.call('TIME'))
  if start then
    for _, v in ipairs(start) do out[#out + 1] = v end
  end
end
return out

-- line: what the scripts that read the waiters' line share. now_ms is the
-- server's time in ms (leases are server times); forget_dead drops from a
-- queue and its leases the waiters whose lease ran out (they gave up or
-- crashed), so that they block no one.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function forget_dead(queue, leases)
  local dead = redis.call('ZRANGEBYSCORE', leases, '-inf', now_ms())
  if #dead > 0 then
    redis.call('ZREM', queue, unpack(dead))
    redis.call('ZREM', leases, unpack(dead))
  end
end


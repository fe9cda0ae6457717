-- lease: what the scripts that keep holds and fencing counters share.
--
-- A lock is a hash: "owner", and per hold of that owner a field
-- "h:<hold>" whose value is the hold's lease end in the node's ms. The
-- lock's own expiry is the latest lease end among its live holds, so that
-- a hold with a short TTL never cuts the lease of a longer one of the same
-- owner (WithOwner), whichever is granted, renewed or released first.
--
-- A fencing counter lives as long as anything holds its key and a
-- retention more: renewals, raises and grants to a key already held never
-- shorten its expiry (the first grant of a free key sets it afresh: every
-- earlier hold has ended), and a key that has none (it expired, untouched
-- for a retention, or was lost in an empty restart) reads as the node's
-- clock in µs, above every token issued a retention before.

-- server_ms is TIME's reply t in ms.
local function server_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

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

-- counter_keep raises the counter fence to at least value and keeps it for
-- at least px ms: it lowers neither.
local function counter_keep(fence, value, px)
  if tonumber(redis.call('GET', fence) or '0') < tonumber(value) then
    set_kept(fence, string.format('%d', value), px)
  else
    keep_for(fence, px)
  end
end

-- counter_renew keeps the counter fence of a renewed hold for at least px
-- ms; where it is missing (deleted, or left by an older version to expire)
-- it sets it to the holding's token. A counter there is at least the token
-- already (the write-back) and is not read again: cheaper than
-- counter_keep on the watchdog's path.
local function counter_renew(fence, token, px)
  local left = redis.call('PTTL', fence)
  if left == -2 then
    redis.call('SET', fence, string.format('%d', token), 'PX', px)
  elseif left >= 0 and left < tonumber(px) then
    redis.call('PEXPIRE', fence, px)
  end
end

-- counter_held is the counter fence for a hold that issues no token of its
-- own (a reader, a nested hold): its value, or where it has none the
-- node's clock in µs from TIME's reply t — either way at least every token
-- a live or recently live holder uses — kept for at least px ms.
local function counter_held(fence, t, px)
  local value = tonumber(redis.call('GET', fence) or '0')
  if value > 0 then
    keep_for(fence, px)
    return value
  end
  value = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', fence, string.format('%d', value), 'PX', px)
  return value
end

-- set.lua: a fenced write (Set, SetTTL, Delete), check and write in one
-- script so that nothing runs between them.
--
-- KEYS[1] the value, KEYS[2] the largest token the key has accepted (both
-- in one hash tag: fence.KeyNames). ARGV[1] the write's token, a canonical
-- decimal (no sign, no leading zero); ARGV[2] "set" or "del"; ARGV[3] the
-- value; ARGV[4] its TTL in ms, "0" for none.
--
-- Replies {1, token} when the write was done (the token key then holds the
-- write's token), {0, seen} when it was refused because seen is larger:
-- then nothing is written.

-- Lua numbers are doubles: past 2^53 tonumber() would take distinct tokens
-- for equal ones. Canonical decimals compare exactly by length, then as
-- strings (digits collate in order).
local function below(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end

local token, op = ARGV[1], ARGV[2]
local seen = redis.call('GET', KEYS[2])
if seen then
  if not string.match(seen, '^[1-9]%d*$') and seen ~= '0' then
    return redis.error_reply('fence: ' .. KEYS[2] .. ' does not hold a token')
  end
  if below(token, seen) then
    return {0, seen}
  end
end
redis.call('SET', KEYS[2], token)
if op == 'del' then
  redis.call('DEL', KEYS[1])
elseif ARGV[4] == '0' then
  redis.call('SET', KEYS[1], ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
end
return {1, token}

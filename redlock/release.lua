-- Release: compare-and-delete; never touches another owner's lock. One call
-- releases every lock of a holding (one for Lock, several for LockMany).
-- KEYS, per lock (4 each): the lock, the fencing counter, the waiters'
-- queue, its leases.
-- ARGV[1] owner, ARGV[2] hold id, ARGV[3] "1" to release the whole lock, "0"
-- to drop only this hold (the lock is deleted when no live hold is left,
-- else it lives as long as the longest of them: lease.lua),
-- ARGV[4] "1" to announce a freed lock, when waiters are queued, on its
-- channel (the message names the first in line, so that only it need wake;
-- it is "" — everyone wakes — when that is a reader);
-- "" not to announce (undoing a failed attempt must not wake its own waiter),
-- ARGV[5] the fencing state's retention in ms, then per lock the holding's
-- fencing token: every node that answers raises its counter to it, so that
-- a node restarted empty later cannot hand out a smaller one; then per lock
-- its channel (KeyNames.Channel).
-- Returns 1 when our hold was on every lock and each is now free, 2 when it
-- was on every lock but other holds of the same owner remain on some, 0
-- when some lock was not ours (the others are released all the same).
-- An Unlock (ARGV[4] set) also takes the owner out of each waiters' queue —
-- on every node it reaches, granted or not — so that the next in line is
-- first everywhere.
-- Without waiters (the common case) a queue costs one EXISTS.
local function release(lock, fence, queue, leases, token, channel)
  local queued = ARGV[4] ~= '' and redis.call('EXISTS', queue) == 1
  if queued and redis.call('ZREM', queue, ARGV[1]) == 1 then
    redis.call('ZREM', leases, ARGV[1])
  end
  if token > 0 and tonumber(redis.call('GET', fence) or '0') < token then
    set_kept(fence, string.format('%d', token), ARGV[5])
  end
  if redis.call('HGET', lock, 'owner') ~= ARGV[1] then
    return 0
  end
  if ARGV[3] ~= '1' then
    -- The other holds keep the lock as long as the longest of them lives
    -- (lease.lua); with none alive it is freed.
    redis.call('HDEL', lock, 'h:' .. ARGV[2])
    if lease_holds(lock, server_ms(redis.call('TIME'))) then
      return 2
    end
  end
  redis.call('DEL', lock)
  if queued then
    local first = redis.call('ZRANGE', queue, 0, 0)[1]
    if first then
      -- A reader first in line ("r:<owner>", racquire.lua): wake every
      -- waiter (""), so that all the readers behind it come in together.
      if string.sub(first, 1, 2) == 'r:' then first = '' end
      redis.call('PUBLISH', channel, first)
    end
  end
  return 1
end

local result = 1
local n = #KEYS / 4
for i = 1, n do
  local r = release(KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1], KEYS[4 * i], tonumber(ARGV[5 + i]), ARGV[5 + n + i])
  if r == 0 or (r == 2 and result == 1) then
    result = r
  end
end
return result

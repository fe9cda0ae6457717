-- Release: compare-and-delete; never touches another owner's lock. One call
-- releases every lock of a holding (one for Lock, several for LockMany).
-- KEYS, per lock (4 each, the first of acquire.lua's): the lock, the
-- fencing counter, the waiters' queue, its leases.
-- ARGV: the prelude's owner, hold and retention; then [8] "1" to release
-- the whole lock, "0" to drop only this hold (the lock is deleted when no
-- live hold is left, else it lives as long as the longest of them:
-- lease_holds), [9] "1" to announce a freed lock, when waiters are queued,
-- on its channel (announce_first); "" not to announce (undoing a failed
-- attempt must not wake its own waiter); then per lock the holding's
-- fencing token: every node that answers raises its counter to it, so
-- that a node restarted empty later cannot hand out a smaller one; then
-- per lock its channel (KeyNames.Channel).
-- Returns 1 when our hold was on every lock and each is now free, 2 when it
-- was on every lock but other holds of the same owner remain on some, 0
-- when some lock was not ours (the others are released all the same).
-- An Unlock (announcing) also takes the owner out of each waiters' queue —
-- on every node it reaches, granted or not — so that the next in line is
-- first everywhere.
-- Without waiters (the common case) a queue costs one EXISTS.
local whole, announce = ARGV[8] == '1', ARGV[9] ~= ''
local n = #KEYS / 4

local function release(lock, fence, queue, leases, token, channel)
  local queued = announce and redis.call('EXISTS', queue) == 1
  if queued and redis.call('ZREM', queue, owner) == 1 then
    redis.call('ZREM', leases, owner)
  end
  raise_counter(fence, token)
  if redis.call('HGET', lock, 'owner') ~= owner then
    return 0
  end
  if not whole then
    -- The other holds keep the lock as long as the longest of them lives;
    -- with none alive it is freed.
    redis.call('HDEL', lock, 'h:' .. hold)
    if lease_holds(lock, now_ms()) then
      return 2
    end
  end
  redis.call('DEL', lock)
  if queued then announce_first(queue, channel) end
  return 1
end

local result = 1
for i = 1, n do
  local lock, fence, queue, leases = lock_keys(i, 4)
  local r = release(lock, fence, queue, leases, tonumber(ARGV[9 + i]), ARGV[9 + n + i])
  if r == 0 or (r == 2 and result == 1) then
    result = r
  end
end
return result

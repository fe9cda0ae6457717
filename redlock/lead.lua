-- Lead: make a Campaign's hold the leader of its name on this node. The
-- leader is recorded in the lock's own hash, so that it is renewed,
-- released and lost with the hold: "term", the Lock's token, and "v", the
-- value it campaigned with. Then it announces the new leader on the
-- name's leader channel, where Observe listens.
-- KEYS: the lock, its fencing counter.
-- ARGV: the prelude's owner, hold and retention; [8] the term, [9] the
-- value, [10] the leader channel.
-- Returns 1 when the hold is ours here and now leads, 0 when the node does
-- not hold it (lost, or never granted here): nothing written.
local lock, fence = KEYS[1], KEYS[2]
local term, value, channel = ARGV[8], ARGV[9], ARGV[10]
if redis.call('HGET', lock, 'owner') ~= owner or not redis.call('HGET', lock, 'h:' .. hold) then
  return 0
end
-- The counter is at least the term already on a granting node that the
-- write-back reached; raising it here covers one it did not need to.
raise_counter(fence, term)
redis.call('HSET', lock, 'term', term, 'v', value)
redis.call('PUBLISH', channel, '')
return 1

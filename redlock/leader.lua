-- Leader: who leads the name on this node. A leader is a lock whose hash
-- has the fields lead.lua writes.
-- KEYS: the lock.
-- Returns {owner, term, value, the lock's remaining lease in ms}, or {}
-- when no leader is recorded here (the lock is free, or held by a hold
-- that has not been made leader yet, or by Lock).
local f = redis.call('HMGET', KEYS[1], 'owner', 'term', 'v')
if not f[1] or not f[2] then return {} end
return {f[1], f[2], f[3] or '', redis.call('PTTL', KEYS[1])}

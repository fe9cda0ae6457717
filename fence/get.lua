-- get.lua: the value and the token of a key, read together.
--
-- KEYS[1] the value, KEYS[2] the token (fence.KeyNames). Replies {value,
-- token}, each false when absent: a key deleted keeps its token (a
-- tombstone) with no value.
return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}

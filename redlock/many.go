package redlock

import (
	"context"
)

// LockMany acquires every key of keys at once, or none, waiting as Lock
// does: in line on each key, woken when any of them is released. The Lock it
// returns holds them all: its Unlock, Extend and renewal cover every key in
// one call per node, a node counts for it only where it holds every key, and
// the keys are lost together. Token is the largest of the keys' tokens;
// TokenOf gives each key's.
//
// On each node one script takes every key or none, so callers whose sets
// overlap, in any order, never hold part of one and wait for the rest: no
// deadlock. Their queues on the nodes order every waiter by the same ticket,
// so the oldest waiter is first in line on all of its keys and waits only
// for holders.
//
// LockMany refuses, with ErrInvalid and nothing sent: no keys, more than
// MaxKeys, an empty or duplicate key, a key longer than MaxKeyLen, and — when a node is a Redis
// Cluster, where one script may touch only one hash slot — keys whose names
// do not share a hash slot. Each key's names carry the key itself as their
// hash tag (Keys), so on a cluster node LockMany works only for keys that
// happen to hash to one slot: give LockMany independent masters instead.
func (c *Client) LockMany(ctx context.Context, keys []string, opts ...Option) (*Lock, error) {
	if err := checkMany(keys); err != nil {
		return nil, err
	}
	return c.lock(ctx, keys, opts, writer)
}

// TryLockMany makes one attempt to acquire every key of keys at once, as
// TryLock does for one: it does not queue, and it is refused while Lock or
// LockMany callers wait for any of them. It refuses the input LockMany
// refuses.
func (c *Client) TryLockMany(ctx context.Context, keys []string, opts ...Option) (*Lock, error) {
	if err := checkMany(keys); err != nil {
		return nil, err
	}
	return c.tryLock(ctx, keys, opts, writer)
}

// MaxKeys bounds how many keys LockMany and TryLockMany take at once: each
// node takes them all in one script call, which blocks that node while it
// runs, and the call must end well within the node timeout or every node
// times out and the keys' fencing state stays behind for the fence
// retention. Measured on three loopback masters (redis 7.0) on a loaded
// 2-core machine (BenchmarkTryLockManyUnlock): TryLockMany and Unlock of
// 256 keys took 13 ms, of one key 4 ms; an acquisition of 1,024 keys took
// 15–24 ms, most of DefaultNodeTimeout. A Client with a longer node
// timeout still takes at most MaxKeys: split a larger set, or lock a name
// that stands for it.
const MaxKeys = 256

// checkMany refuses an empty set of keys given to LockMany or TryLockMany,
// and one of more than MaxKeys.
func checkMany(keys []string) error {
	switch {
	case len(keys) == 0:
		return invalid("no keys")
	case len(keys) > MaxKeys:
		return invalid("%d keys, more than MaxKeys (%d) in one LockMany", len(keys), MaxKeys)
	}
	return nil
}

// checkKeys refuses keys the library cannot lock together: each must be a
// valid key, none twice, and on cluster nodes all in one hash slot.
func (c *Client) checkKeys(keys []string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
		if seen[k] {
			return invalid("key %s given twice", shortKey(k))
		}
		seen[k] = true
	}
	if len(keys) > 1 && c.hasCluster() {
		slot := slotOf(Keys("", keys[0]).Lock)
		for _, k := range keys[1:] {
			if s := slotOf(Keys("", k).Lock); s != slot {
				return invalid("keys %s and %s are on hash slots %d and %d: a cluster node takes several keys at once only on one slot",
					shortKey(keys[0]), shortKey(k), slot, s)
			}
		}
	}
	return nil
}

// hasCluster reports whether any node is a Redis Cluster.
func (c *Client) hasCluster() bool {
	for _, n := range c.nodes {
		if n.cluster {
			return true
		}
	}
	return false
}

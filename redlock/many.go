package redlock

import (
	"context"
)

// LockMany acquires every key of keys at once, or none, waiting as Lock
// does. The Lock holds them all: renewed, released and lost together. See
// doc.go, "Several keys, all or none" and "Limits".
func (c *Client) LockMany(ctx context.Context, keys []string, opts ...Option) (*Lock, error) {
	if err := checkMany(keys); err != nil {
		return nil, err
	}
	return c.lock(ctx, keys, opts, writer)
}

// TryLockMany makes one attempt to acquire every key of keys at once, as
// TryLock does for one key. It refuses the input LockMany refuses.
func (c *Client) TryLockMany(ctx context.Context, keys []string, opts ...Option) (*Lock, error) {
	if err := checkMany(keys); err != nil {
		return nil, err
	}
	return c.tryLock(ctx, keys, opts, writer)
}

// MaxKeys bounds how many keys LockMany and TryLockMany take at once, so
// that one script call stays well within the node timeout (doc.go, "Limits").
const MaxKeys = 64

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

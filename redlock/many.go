package redlock

import (
	"context"
)

// LockMany acquires every key of keys at once, or none, waiting as Lock
// does, and returns as Lock does when ctx ends, the Client closes or no
// majority can ever answer. On each node one script call takes every key
// or none, so two callers whose sets overlap never deadlock, in any order.
// The Lock holds them all: renewed, released and lost together (a node
// that lost one key counts as lost for all), each key fenced on its own
// (TokenOf). An empty set, more than MaxKeys keys, a bad key, a key given
// twice, and, on a Redis Cluster member, keys of several hash slots are
// refused with ErrInvalid, nothing sent.
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

// MaxKeys bounds how many keys LockMany and TryLockMany take at once: each
// node takes them all in one script call, which blocks that node while it
// runs, and must end well within the node timeout. On three loopback
// masters on a loaded 2-core machine, TryLockMany and Unlock of 64 keys
// took 6.6 ms, of 256 keys 13 ms, and under the race detector an Unlock of
// 256 keys outran DefaultNodeTimeout; the bound keeps a factor of about
// four below it, whatever the node timeout. Split a larger set, or lock a
// name that stands for it.
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

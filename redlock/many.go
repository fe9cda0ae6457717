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

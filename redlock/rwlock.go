package redlock

import (
	"context"
)

// RLock acquires a shared hold of key, a reader, waiting as Lock does, and
// returns as Lock does when ctx ends, the Client closes or no majority can
// ever answer: any number of readers hold key at once, or one writer (Lock,
// TryLock, LockMany). Readers and writers wait in one line, by the time of
// their first attempt: a reader is granted only when no writer waits ahead
// of it, a writer only when first in line and no reader holds, so neither
// starves the other. A reader's validity, renewal, loss and release are a
// lock's; its Token is the largest counter among its grants, at least the
// token of every writer that released key before it. An owner's reader and
// writer are not one holder (see WithOwner).
func (c *Client) RLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.lock(ctx, []string{key}, opts, reader)
}

// TryRLock makes one attempt to acquire a reader of key, as TryLock does,
// and fails as TryLock fails. It is refused (ErrNotObtained) while a
// writer holds or waits for key, unless its owner already reads key.
func (c *Client) TryRLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.tryLock(ctx, []string{key}, opts, reader)
}

package redlock

import (
	"context"
)

// RLock acquires a shared hold of key, a reader, waiting as Lock does: any
// number of readers hold key at once, or one writer. Readers and writers
// wait in one line; see doc.go, "Readers and writers".
func (c *Client) RLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.lock(ctx, []string{key}, opts, reader)
}

// TryRLock makes one attempt to acquire a reader of key, as TryLock does.
// It is refused while a writer holds or waits for key, unless its owner
// already reads key (see doc.go, "Readers and writers").
func (c *Client) TryRLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.tryLock(ctx, []string{key}, opts, reader)
}

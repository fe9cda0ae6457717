package redlock

import "context"

// RLock acquires a shared hold of key, waiting until it succeeds or ctx
// ends: any number of readers at once, or one writer (Lock, TryLock).
func (c *Client) RLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

// TryRLock makes one attempt to acquire a shared hold of key.
func (c *Client) TryRLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

package redlock

import "context"

// RLock acquires a shared hold of key, waiting until it succeeds or ctx
// ends: any number of readers at once, or one writer (Lock, TryLock).
//
// Not built yet: after checking key (ErrInvalid) it returns an error
// matching errors.ErrUnsupported, and sends nothing.
func (c *Client) RLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

// TryRLock makes one attempt to acquire a shared hold of key. Not built
// yet: see RLock.
func (c *Client) TryRLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

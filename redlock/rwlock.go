package redlock

import (
	"context"
	"errors"
	"fmt"
)

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

// errNotYet is the error of the kinds of hold not built yet: RLock and
// TryRLock check their input, then return it. It matches
// errors.ErrUnsupported; nothing is sent.
var errNotYet = fmt.Errorf("redlock: not implemented yet: %w", errors.ErrUnsupported)

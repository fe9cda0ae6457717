package redlock

import (
	"context"
	"errors"
	"fmt"
)

// MaxLimit bounds the limit of a semaphore (Acquire): each permit is a key
// on the nodes, and a waiter may try every one of them.
const MaxLimit = 1024

// Acquire takes one of limit permits of name, waiting until one is free or
// ctx ends; when ctx has no deadline, WithMaxWait bounds the wait.
//
// Not built yet: after checking its input (ErrInvalid for an empty or long
// name, or a limit outside [1, MaxLimit]) it returns an error matching
// errors.ErrUnsupported, and sends nothing.
func (c *Client) Acquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	if err := checkLimit(name, limit); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

// TryAcquire makes one attempt to take one of limit permits of name. Not
// built yet: see Acquire.
func (c *Client) TryAcquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	if err := checkLimit(name, limit); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

// checkLimit refuses a semaphore's bad name or limit.
func checkLimit(name string, limit int) error {
	if err := checkKey(name); err != nil {
		return err
	}
	if limit < 1 || limit > MaxLimit {
		return invalid("limit %d must be in [1, %d]", limit, MaxLimit)
	}
	return nil
}

// errNotYet is the error of the kinds of hold not built yet: RLock,
// TryRLock, Acquire and TryAcquire check their input, then return it. It
// matches errors.ErrUnsupported; nothing is sent.
var errNotYet = fmt.Errorf("redlock: not implemented yet: %w", errors.ErrUnsupported)

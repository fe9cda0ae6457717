package redlock

import (
	"context"
	"errors"
)

// MaxLimit bounds the limit of a semaphore (Acquire): each permit is a key
// on the nodes, and a waiter may try every one of them.
const MaxLimit = 1024

// Acquire takes one of limit permits of name, waiting until one is free or
// ctx ends; when ctx has no deadline, WithMaxWait bounds the wait.
func (c *Client) Acquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	if err := checkLimit(name, limit); err != nil {
		return nil, err
	}
	return nil, errNotYet
}

// TryAcquire makes one attempt to take one of limit permits of name.
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

var errNotYet = errors.New("redlock: not implemented yet (issue 11)")

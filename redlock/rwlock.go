package redlock

import (
	"context"
)

// RLock acquires a shared hold of key — a reader — waiting until it
// succeeds or ctx ends; when ctx has no deadline, WithMaxWait bounds the
// wait. Any number of readers hold key at once, or one writer: Lock,
// TryLock and LockMany of the same key, as with sync.RWMutex. The Lock it
// returns is held, renewed (WithAutoRenew), lost and released like a
// writer's: Done closes and Err returns ErrLockLost before Until when it is
// lost; Unlock and Extend behave as a writer's do. Key and Keys give key;
// Token gives the fencing token of the last writer — the largest fencing
// counter among the granting nodes, which a reader does not raise; a node
// whose counter expired (the key untouched for the fencing retention) gives
// its clock in microseconds, which is larger — so a store that takes writes
// fenced by writers can check that a reader saw the latest of them.
//
// Readers and writers wait in one line, in the order of their first
// attempt: a reader waits for every writer ahead of it, a writer for every
// reader ahead of it and for those that hold the key. So a writer is not
// starved by a stream of readers: readers that come after it wait behind
// it, and it waits only for the readers holding or queued when it came
// (up to the clock difference between their clients, by which their
// places in line are ordered). A writer's Unlock wakes every reader waiting
// behind it at once; the last reader's Unlock wakes the writer first in
// line.
//
// Why a reader and a writer never hold key together: a node grants a reader
// only while no writer holds key there, and a writer only while no live
// reader does; each holding needs a majority of nodes, and any two
// majorities share a node. A reader's grant on a node is a lease of the TTL,
// counted by the node's own clock as a writer's key expiry is, and its
// validity on the client is counted the same way (see the package doc), so
// both kinds rest on the same assumptions.
//
// A reader is not a writer of the same owner: with WithOwner, an owner that
// holds a reader and asks to write (or holds the writer and asks to read)
// waits for itself, as a goroutine that holds a sync.RWMutex's read lock
// and calls Lock does. Readers of one owner may nest: each is a hold of its
// own, with its own TTL, and a reader of an owner that already reads key is
// granted at once, even while a writer waits for that first read — so an
// owner that always keeps one read held keeps writers waiting.
//
// When RLock gives up, the error matches ErrNotObtained and ctx.Err(), as
// Lock's does. It refuses, with ErrInvalid and nothing sent, the input Lock
// refuses.
func (c *Client) RLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.lock(ctx, []string{key}, opts, reader)
}

// TryRLock makes one attempt to acquire a shared hold of key (see RLock)
// and returns at once: the Lock, or an error matching ErrNotObtained, with
// the *QuorumError of each node's vote. It is refused while a writer holds
// key, and while any writer waits for it — a reader may not jump ahead of a
// writer in line — even if only readers hold it, unless its owner
// (WithOwner) already reads key: readers of one owner nest. A failed attempt is undone
// on every node that may have granted it, in the background, as TryLock's
// is.
func (c *Client) TryRLock(ctx context.Context, key string, opts ...Option) (*Lock, error) {
	return c.tryLock(ctx, []string{key}, opts, reader)
}

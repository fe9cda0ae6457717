package redlock

import "crypto/rand"

// The identity of a holding: who holds, which hold, and of what kind.

// identity is what a lock's value on the nodes is made of: the owner, shared
// by every attempt of one acquisition (or by every acquisition of a
// WithOwner owner), the hold of one attempt, and the kind of holding.
type identity struct {
	owner, hold string
	reentrant   bool // the owner was given: Unlock drops only its own hold
	kind        holdKind
}

// A holdKind says whom a holding excludes.
type holdKind uint8

const (
	writer holdKind = iota // Lock, TryLock, LockMany: everyone
	reader                 // RLock, TryRLock: writers only
)

// identity returns the identity of a new acquisition of kind: the owner
// given (WithOwner), or a random one of its own.
func (cfg *config) identity(kind holdKind) identity {
	if cfg.owner != "" {
		return identity{owner: cfg.owner, reentrant: true, kind: kind}
	}
	return identity{owner: rand.Text(), kind: kind}
}

// readerMark starts a reader's member of the waiters' queues.
const readerMark = "r:"

// queueMember is id's member of the waiters' queues, and what a wake-up
// names it by: its owner, or "r:<owner>" for a reader — so that a waiter
// is known as a reader or a writer, and an owner's reader and writer are
// two waiters.
func (id identity) queueMember() string {
	if id.kind == reader {
		return readerMark + id.owner
	}
	return id.owner
}

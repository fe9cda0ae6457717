package redlock

import (
	"context"
	"crypto/rand"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// The identity of a holding, who holds and which hold, and its kind: what
// it excludes, and all that depends on it.

// identity is what a lock's value on the nodes is made of: the owner, shared
// by every attempt of one acquisition (or by every acquisition of a
// WithOwner owner), and the hold of one attempt.
type identity struct {
	owner, hold string
	reentrant   bool // the owner was given: Unlock drops only its own hold
}

// identity returns the identity of a new acquisition: the owner given
// (WithOwner), or a random one of its own.
func (cfg *config) identity() identity {
	if cfg.owner != "" {
		return identity{owner: cfg.owner, reentrant: true}
	}
	return identity{owner: rand.Text()}
}

// A holdKind is what a holding is — a writer's hold of keys (Lock, TryLock,
// LockMany), which excludes everyone; a reader's (RLock, TryRLock), which
// excludes writers only; or one permit of a semaphore (Acquire) — and all
// that taking, keeping and releasing it depends on: its scripts, its member
// in the waiters' line, and how a node's vote is read. An acquisition's is
// chosen once, when it is made: writer, reader, or a permitKind.
type holdKind interface {
	// op names the acquiring call in errors and observers.
	op() string
	// member is owner's member of the waiters' queues, and what a wake-up
	// names it by.
	member(owner string) string
	// line is the names of the waiters' line of a holding of kss.
	line(kss keysets) keysets
	// leaveMark is leave.lua's argument for a waiter of this kind.
	leaveMark() string

	// calls returns each node's acquire call of attempt a: with restart
	// detection on, each carries the node's LASTSAVE as a's Client last
	// saw it.
	calls(a *acquisition, ticket string) []scriptCall
	// valuesPerVote is the room a vote of a's needs.
	valuesPerVote(a *acquisition) int
	// vote reads node n's reply to a's call, its value written into into
	// when it has room.
	vote(a *acquisition, into []int64, n int, reply []any, err error) quorum.Vote[[]int64]
	// decided tells when an attempt's round is decided; nil: once it is
	// won or lost.
	decided() func(*quorum.Tally[[]int64]) bool
	// won returns what attempt at of a holds if its round's tally t is
	// won: the acquisition of the keys it holds, the permit (-1 for
	// keys), and the tally of that holding.
	won(a, at *acquisition, t *quorum.Tally[[]int64]) (*acquisition, int, quorum.Tally[[]int64])
	// undoOthers undoes, in the background, the grants of attempt at,
	// which won permit with tally t, that its Lock does not hold.
	undoOthers(ctx context.Context, at *acquisition, t *quorum.Tally[[]int64], permit int)
	// grantedOn is attempt a on the keys vote v may have left held.
	grantedOn(a *acquisition, v quorum.Vote[[]int64]) *acquisition
	// permitOf is the permit granted by v, a grant, or -1 for keys.
	permitOf(v quorum.Vote[[]int64]) int
	// wakeAfterRefusal reports whether a waiter a majority refused may
	// sleep until a release wakes it by name, the backoff only a
	// fallback; a semaphore's waiters retry on the backoff.
	wakeAfterRefusal() bool
	// clockTokens reports whether a grant's tokens may come from the
	// node's clock, and so be covered without a write-back (coverWindow).
	clockTokens() bool

	// releaseCall is the call that releases a's holding as kind says;
	// tokens are the counters to raise, one per key, or nil to raise none.
	releaseCall(a *acquisition, kind releaseKind, tokens []int64) *scriptCall
	// lateTokens is the tokens a late answer's release raises for l.
	lateTokens(l *Lock) []int64
	// extendArgs is extend.lua's mark for l's holding, and the name of the
	// record its third key is, or "" for each key's readers.
	extendArgs(l *Lock) (mark, record string)
}

// A keysKind is the kind of a hold of keys: writer or reader.
type keysKind struct {
	acquire *script // acquire.lua or racquire.lua
	release func(a *acquisition, kind releaseKind, tokens []int64) *scriptCall
	prefix  string // of its member in the waiters' queues
	mark    string // extend.lua's
	leave   string // leave.lua's
	clock   bool   // clockTokens
}

var (
	writer holdKind = &keysKind{acquire: acquireScript, release: (*acquisition).wreleaseCall, mark: "w", clock: true}
	reader holdKind = &keysKind{acquire: racquireScript, release: (*acquisition).rreleaseCall, prefix: readerMark,
		mark: "r", leave: "r"}
)

// readerMark starts a reader's member of the waiters' queues: so that a
// waiter is known as a reader or a writer, and an owner's reader and writer
// are two waiters.
const readerMark = "r:"

func (k *keysKind) op() string                 { return "lock" }
func (k *keysKind) member(owner string) string { return k.prefix + owner }
func (k *keysKind) line(kss keysets) keysets   { return kss }
func (k *keysKind) leaveMark() string          { return k.leave }

func (k *keysKind) calls(a *acquisition, ticket string) []scriptCall {
	pre := a.holderArgs(true, ticket)
	return a.perNode(a.newCall(k.acquire, 5, &pre, 0))
}

// valuesPerVote: a token per key and the clock flag.
func (k *keysKind) valuesPerVote(a *acquisition) int { return len(a.kss) + 1 }

// vote: a grant's value is the token of each key, then 1 if every one came
// from the node's clock, else 0; a refusal's, the holder's remaining lease.
func (k *keysKind) vote(a *acquisition, into []int64, n int, reply []any, err error) quorum.Vote[[]int64] {
	return a.readVote(into, n, reply, err, len(a.kss), true)
}

func (k *keysKind) decided() func(*quorum.Tally[[]int64]) bool { return nil }

// won: every grant holds every key.
func (k *keysKind) won(_, at *acquisition, t *quorum.Tally[[]int64]) (*acquisition, int, quorum.Tally[[]int64]) {
	return at, -1, *t
}

func (k *keysKind) undoOthers(context.Context, *acquisition, *quorum.Tally[[]int64], int) {}

func (k *keysKind) grantedOn(a *acquisition, _ quorum.Vote[[]int64]) *acquisition { return a }
func (k *keysKind) permitOf(quorum.Vote[[]int64]) int                             { return -1 }
func (k *keysKind) wakeAfterRefusal() bool                                        { return true }
func (k *keysKind) clockTokens() bool                                             { return k.clock }

func (k *keysKind) releaseCall(a *acquisition, kind releaseKind, tokens []int64) *scriptCall {
	return k.release(a, kind, tokens)
}

func (k *keysKind) lateTokens(l *Lock) []int64 { return l.tokens }

func (k *keysKind) extendArgs(*Lock) (mark, record string) { return k.mark, "" }

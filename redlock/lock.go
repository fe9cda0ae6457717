package redlock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// A Lock is one holding — of a key (Lock, TryLock, Do), of several keys at
// once, all or none (LockMany), a reader's shared hold (RLock), a
// semaphore's permit (Acquire) or a leadership (Campaign) — granted by a
// majority of the Client's nodes. It is held until Unlock, until it is lost
// (Done closes, Err returns ErrLockLost) or until its Client closes (Err
// returns ErrClosed); a Lock of several keys is held, renewed, released and
// lost as one. It is safe for concurrent use and must not be copied.
type Lock struct {
	acq *acquisition // the winning attempt's: client, keys, names, options, kind, identity and hold

	fenced []bool  // nodes known to hold every key's fencing counter ≥ its token
	tokens []int64 // per key
	token  int64   // the largest of tokens
	permit int     // the semaphore's permit held (Acquire); -1 for a key

	leads atomic.Pointer[leadCall] // a leader's mark, written again where a renewal repairs it (election.go)

	life context.Context // ends when the lock does; its cause is Err()
	end  context.CancelCauseFunc

	// observed is the Lock's own context for its observers' Renewed, Lost
	// and renewal NodeFailed: the acquisition's (what AcquireStart returned)
	// without its cancellation, so that those later events carry the
	// acquisition's values, e.g. its span. Background without observers.
	observed context.Context

	roundMu sync.Mutex // serializes the lock's rounds on the nodes: Extend, renewal, Unlock

	mu        sync.Mutex // guards the fields below
	until     time.Time
	ended     bool        // Done is closed
	released  bool        // Unlock has been called
	byRun     bool        // Run released it: a later Unlock returns nil
	inFlight  []bool      // nodes whose acquire call has not answered yet; nil if none
	inFlight8 [8]bool     // inFlight's array with up to 8 nodes: no allocation of its own
	expiry    clock.Timer // declares the loss at until − the loss margin

	// The watchdog's schedule (Client.renewals), guarded by its mutex.
	due       time.Time // when the next renewal is due
	heapIndex int       // index in the schedule's heap; -1 when not scheduled
}

// newLock returns the Lock of won for a, fenced by f, valid until until,
// holding permit (-1 for keys), its timers armed; nil if the Client closed.
func (a *acquisition) newLock(ctx context.Context, f fencing, until time.Time, won *quorum.Tally[[]int64], permit int) *Lock {
	c, cfg := a.c, &a.cfg
	l := &Lock{acq: a, tokens: f.tokens, token: slices.Max(f.tokens), until: until, fenced: f.nodes,
		heapIndex: -1, permit: permit, observed: context.Background()}
	if len(cfg.observers) > 0 {
		l.observed = context.WithoutCancel(ctx)
	}
	for n := range won.Votes {
		if won.Abandoned(n) {
			if l.inFlight == nil {
				if len(won.Votes) <= len(l.inFlight8) {
					l.inFlight = l.inFlight8[:len(won.Votes)]
				} else {
					l.inFlight = make([]bool, len(won.Votes))
				}
			}
			l.inFlight[n] = true
		}
	}
	l.life, l.end = context.WithCancelCause(context.Background())
	l.mu.Lock() // before track: Close may end l as soon as it is tracked
	if !c.track(l) {
		l.mu.Unlock()
		return nil
	}
	l.expiry = cfg.clock.AfterFunc(l.untilLoss(), l.expire)
	l.mu.Unlock()
	if cfg.autoRenew {
		c.renewals.schedule(l, l.renewIn())
	}
	return l
}

// Key returns the key the lock was acquired for, as given to Lock; for
// LockMany, the keys joined by commas.
func (l *Lock) Key() string { return l.acq.key }

// Keys returns the keys the lock holds, in the order given: one for Lock,
// several for LockMany.
func (l *Lock) Keys() []string { return slices.Clone(l.acq.keys) }

// Token returns the fencing token of this holding: the largest value of the
// key's fencing counter among the granting nodes. Every later holding of
// the key has a larger one, so a store that accepts a write only with a
// token at least as large as every token it has seen rejects the writes of
// a holder whose lock has since passed to another. Tokens are large (about
// 1.8e15) and not consecutive: compare them, never count them. For several
// keys Token is the largest of theirs; a store fenced per key should use
// TokenOf. A reader's Token is at least the token of every writer that
// released the key before it; a permit's orders that permit's holders.
func (l *Lock) Token() int64 { return l.token }

// TokenOf returns the fencing token of key within this holding, or 0 if the
// lock does not hold key.
func (l *Lock) TokenOf(key string) int64 {
	if i := slices.Index(l.acq.keys, key); i >= 0 {
		return l.tokens[i]
	}
	return 0
}

// Permit returns the semaphore permit a Lock from Acquire or TryAcquire
// holds, in [0, limit), or -1 for a Lock of keys.
func (l *Lock) Permit() int { return l.permit }

// Until returns the end of the lock's validity, on the local monotonic clock.
// Renewals move it forward. It is only meaningful while Err() is nil.
func (l *Lock) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done returns a channel that is closed when the lock ends: released, lost,
// or its Client closed. A lost lock's channel closes before Until(), with a
// tenth of the TTL (at least one node timeout) to spare.
func (l *Lock) Done() <-chan struct{} { return l.life.Done() }

// Err returns nil while the lock is held; then why it ended: ErrNotHeld after
// Unlock, ErrLockLost if it was lost, ErrClosed if its Client closed.
func (l *Lock) Err() error {
	if l.life.Err() == nil {
		return nil
	}
	return context.Cause(l.life)
}

// Extend resets the lease on every node to the full TTL and moves Until. It
// succeeds only while the lock is valid and a majority extended it within
// the new validity, and never recreates a key that vanished. It returns
// ErrNotHeld after Unlock; an error matching ErrLockLost once the lock is
// lost (Done is then closed); ErrClosed on a closed Client; ErrInvalid for
// a nil ctx; and a *QuorumError matching neither when too few nodes
// answered, ctx's end included: the lock then stays valid until Until, and
// Extend may be tried again. No node call waits past the node timeout.
func (l *Lock) Extend(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	if !l.acq.c.begin() {
		return ErrClosed
	}
	defer l.acq.c.end()
	l.roundMu.Lock()
	defer l.roundMu.Unlock()
	return l.extend(ctx)
}

// extend runs one extension round, without repair. l.roundMu must be held.
func (l *Lock) extend(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return err
	}
	if !l.acq.cfg.clock.Now().Before(l.Until()) {
		l.lose(ErrLockLost)
		return ErrLockLost
	}
	return l.acq.c.extendRound(ctx, []*Lock{l}, false)[0]
}

// Unlock releases the lock on every node, in parallel, each call under the
// node timeout and detached from ctx's cancellation, so that a deferred
// Unlock still runs after ctx ended; renewal has stopped when it returns.
// It returns nil when a majority confirmed the release; an error matching
// ErrLockLost when the lock had been lost or a majority no longer held it
// (the work done under it may have overlapped another holder's);
// ErrNotHeld when called again (nil, though, after Run released the lock);
// ErrClosed on a closed Client; ErrInvalid for a nil ctx; and a
// *QuorumError matching neither when too few nodes answered to tell — the
// lock then expires with its TTL where the release did not land. It never
// deletes another owner's lock.
func (l *Lock) Unlock(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	if !l.acq.c.begin() {
		return ErrClosed
	}
	defer l.acq.c.end()
	l.roundMu.Lock() // waits for a renewal in flight: none can outlive Unlock
	defer l.roundMu.Unlock()
	prior := l.Err()
	if !l.markReleased() {
		return l.againErr()
	}
	t := l.release(ctx)
	nodeFailures(ctx, l.acq, "unlock", &t)
	switch {
	case prior != nil:
		return prior // already reported as lost; the release above only cleans up
	case t.Count(quorum.Refused) >= t.Need:
		return quorumError(l.acq.c, "unlock", l.acq.key, ErrLockLost, &t)
	case t.Won():
		return nil
	}
	return quorumError(l.acq.c, "unlock", l.acq.key, nil, &t)
}

// releaseKind is what Unlock asks of the nodes: a reentrant owner's hold is
// dropped, any other lock deleted.
func (l *Lock) releaseKind() releaseKind {
	if l.acq.id.reentrant {
		return unlockHold
	}
	return unlockLock
}

// answered records that node n's acquire call returned, and reports whether
// Unlock already ran — and so left n for this call to release.
func (l *Lock) answered(n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight != nil {
		l.inFlight[n] = false
	}
	return l.released
}

// stillInFlight returns the nodes whose acquire call had not answered when
// Unlock ran: the acquire call's late-answer handler (Late) releases those.
// It is read once the lock is marked released, so that each node is
// released by exactly one of the two.
func (l *Lock) stillInFlight() nodeSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	return newNodeSet(l.inFlight)
}

// lose ends the lock, not released, with cause — ErrLockLost, or ErrClosed
// when its Client closes — unless it has ended already.
func (l *Lock) lose(cause error) {
	l.mu.Lock()
	if l.ended { // a released lock has ended too
		l.mu.Unlock()
		return
	}
	l.terminate(cause)
}

// markReleased marks the lock released by Unlock, ending it if it had not
// ended yet; it reports false if Unlock had already run.
func (l *Lock) markReleased() bool {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return false
	}
	l.released = true
	if l.ended {
		l.mu.Unlock()
		return true
	}
	l.terminate(ErrNotHeld)
	return true
}

// terminate ends the lock with cause: Done closes, its timers stop, and it
// leaves the Client and the watchdog's schedule. It is called with l.mu
// held, and unlocks it.
func (l *Lock) terminate(cause error) {
	l.ended = true
	l.expiry.Stop()
	l.end(cause)
	l.acq.c.forget(l)
	l.mu.Unlock()
	if l.acq.cfg.autoRenew {
		l.acq.c.renewals.remove(l) // after l.mu: see renewer.schedule
	}
	if errors.Is(cause, ErrLockLost) {
		l.acq.cfg.observers.lost(l.observed, l.acq.key, cause)
	}
}

func (l *Lock) setUntil(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || !until.After(l.until) {
		return
	}
	l.until = until
	l.expiry.Reset(l.untilLoss())
}

// untilLoss is the time left before the lock must be declared lost. l.mu held.
func (l *Lock) untilLoss() time.Duration {
	return l.until.Add(-l.acq.cfg.lossMargin()).Sub(l.acq.cfg.clock.Now())
}

// renewIn is how long from now l's next renewal is due: one renewal period
// after the start of the round that granted its validity (Until − TTL +
// drift), not after that round's end. The time a slow round took — a
// loaded master, a process short of CPU — is spent from the validity
// already, and must not be waited out a second time before the next
// renewal; it is negative when that renewal is overdue.
func (l *Lock) renewIn() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	granted := l.until.Add(l.acq.cfg.drift() - l.acq.cfg.ttl)
	return granted.Add(l.acq.cfg.renewEvery()).Sub(l.acq.cfg.clock.Now())
}

// expire runs when the lock's validity is about to end without a renewal.
func (l *Lock) expire() {
	l.mu.Lock()
	if left := l.untilLoss(); left > 0 && !l.ended { // moved forward meanwhile
		l.expiry.Reset(left)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.lose(ErrLockLost)
}

func (l *Lock) hasEnded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
}

// Package chaos holds the safety checker of the fault tests: a Recorder that
// records every holding of a lock on one monotonic clock, Check that verifies
// a history (no two holds of a key overlap, fencing tokens strictly increase),
// and a FencedStore that rejects the writes of a holder whose lock has passed
// to another.
//
// The fault scenarios themselves are the package's tests: they run real
// redis-server processes and inject real faults (SIGKILL, restarts, TCP
// proxies, faketime, stalled holders). See docs/CHAOS.md.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// A Hold is one holding of a lock, as its holder saw it. Times are offsets
// from the Recorder's epoch on the local monotonic clock, so holds recorded
// by different goroutines and clients of one process compare exactly.
type Hold struct {
	Client string // who held it
	Key    string // one key; a LockMany holding is recorded as one Hold per key
	Token  int64  // the key's fencing token

	// Shared marks a reader's hold (RLock): readers may overlap each other,
	// never a writer; a reader's token is the last writer's.
	Shared bool
	// Name is a semaphore's name (Acquire), whose holds are recorded under
	// Key <name>#<permit>: no two holds of a permit overlap, and at most
	// limit holds of a name overlap (Report.MostAtOnce).
	Name string
	// Value is a leader's (Lead): what it campaigned with. Its Key is the
	// election's name, its Token the term.
	Value string

	Start time.Duration // when Lock (or TryLock) returned the lock
	End   time.Duration // when the holder stopped its work: Unlock called, or the loss signalled
	Until time.Duration // end of validity (Until()) when the hold ended

	// Lost is set when the library signalled the loss (Done closed with
	// ErrLockLost or ErrClosed) before the holder stopped; LossAt is when
	// the holder saw the signal.
	Lost   bool
	LossAt time.Duration

	// Unsignalled is set when Unlock reported ErrLockLost although no loss
	// had been signalled: the holder was never told that it overran.
	Unsignalled bool
}

// A Recorder collects the holds of one scenario. It is safe for concurrent
// use; its zero value is not usable (call NewRecorder).
type Recorder struct {
	epoch time.Time // monotonic reading every offset is taken from

	mu    sync.Mutex
	holds []Hold
}

// NewRecorder returns an empty Recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{epoch: time.Now()} }

// Now returns the offset of the current instant from the Recorder's epoch.
func (r *Recorder) Now() time.Duration { return time.Since(r.epoch) }

// At returns the offset of t, which must carry a monotonic reading (as
// Lock.Until does), from the Recorder's epoch.
func (r *Recorder) At(t time.Time) time.Duration { return t.Sub(r.epoch) }

// Add appends h to the history, as Hold does; for holds recorded by hand.
func (r *Recorder) Add(h Hold) {
	r.mu.Lock()
	r.holds = append(r.holds, h)
	r.mu.Unlock()
}

// History returns a copy of the holds recorded so far, in recording order.
func (r *Recorder) History() []Hold {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.holds)
}

// Hold runs work under l, which client has just obtained, records the hold
// and unlocks l. It must be called as soon as Lock returns: the hold starts
// when Hold is called. work's ctx is cancelled when the loss of l is
// signalled; the hold ends at that signal or when work returns, whichever
// comes first. Hold returns Unlock's error.
//
// A Lock of several keys is recorded as one Hold per key, each with its own
// token; a semaphore's Lock under <name>#<permit>.
func (r *Recorder) Hold(ctx context.Context, client string, l *redlock.Lock, work func(context.Context)) error {
	return r.hold(ctx, Hold{Client: client}, l, work)
}

// HoldShared is Hold for a reader's Lock (RLock).
func (r *Recorder) HoldShared(ctx context.Context, client string, l *redlock.Lock, work func(context.Context)) error {
	return r.hold(ctx, Hold{Client: client, Shared: true}, l, work)
}

func (r *Recorder) hold(ctx context.Context, h Hold, l *redlock.Lock, work func(context.Context)) error {
	h.Start = r.Now()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		signalled bool
		lossAt    time.Duration
	)
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-l.Done():
			signalled, lossAt = true, r.Now()
			cancel()
		case <-stopWatch:
		}
	}()
	work(wctx)
	h.End = r.Now()
	close(stopWatch)
	<-watched
	if signalled && isLoss(l.Err()) {
		h.Lost, h.LossAt, h.End = true, lossAt, min(h.End, lossAt)
	}
	h.Until = r.At(l.Until())
	err := l.Unlock(context.WithoutCancel(ctx))
	h.Unsignalled = !h.Lost && errors.Is(err, redlock.ErrLockLost)
	if l.Permit() >= 0 {
		h.Key, h.Name, h.Token = fmt.Sprintf("%s#%d", l.Key(), l.Permit()), l.Key(), l.Token()
		r.Add(h)
		return err
	}
	for _, k := range l.Keys() {
		h.Key, h.Token = k, l.TokenOf(k)
		r.Add(h)
	}
	return err
}

// isLoss reports whether err, a Lock's Err(), signals that the lock ended
// without its holder's Unlock.
func isLoss(err error) bool {
	return errors.Is(err, redlock.ErrLockLost) || errors.Is(err, redlock.ErrClosed)
}

package redlock

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// An Observer is told what a Client does, for logs, metrics and traces. Its
// methods are called synchronously, some on the acquisition path: they must
// be fast, must not block, and must be safe for concurrent use. A Client
// without observers pays one nil check per event. Embed NopObserver and
// implement only the methods needed: an event added later is then a no-op.
//
// Each method gets the context its event belongs to: AcquireStart the
// caller's, and the context it returns is the acquisition's; NodeFailed
// during Extend or Unlock the caller's; Renewed, Lost and a renewal's
// NodeFailed the Lock's own (the acquisition's, without its cancellation
// or deadline, for as long as the Lock lives); the NodeFailed of a call
// still running when its round was decided, or of a late answer's
// follow-up, that round's, possibly after the call that ran it returned.
//
// A panic in a method is recovered and logged at Error through the
// event's WithLogger loggers (slog.Default() if none); that observer
// misses the event (AcquireStart's context is then the one it was given)
// and the library goes on as if the method had returned. It is still a
// bug of the observer.
type Observer interface {
	// AcquireStart is called when Lock, TryLock, Do, or another call that
	// acquires a *Lock begins to acquire key (keys joined by commas); the
	// context it returns (e.g. carrying a span) is used for the
	// acquisition's calls, passed to AcquireDone and NodeFailed, and kept,
	// without its cancellation, as the Lock's own context.
	AcquireStart(ctx context.Context, key string, wait bool) context.Context
	// AcquireDone is called once per AcquireStart, with the acquisition's
	// outcome: the lock (nil on failure), how long it took, and the error.
	AcquireDone(ctx context.Context, key string, l *Lock, took time.Duration, err error)
	// Renewed is called after each watchdog extension, err nil on success,
	// with the Lock's own context.
	Renewed(ctx context.Context, key string, err error)
	// Lost is called once when a held lock is lost (cause ErrLockLost),
	// with the Lock's own context.
	Lost(ctx context.Context, key string, cause error)
	// NodeFailed is called for each node call that failed or timed out;
	// op is "lock", "acquire" (a semaphore's permit), "extend" or "unlock".
	// That includes a call still running when its round was decided (the
	// others won it: a frozen master), once it fails or times out — by the
	// node timeout plus the late window — and the undo of a failed
	// attempt or of a late grant (op that of the acquisition).
	NodeFailed(ctx context.Context, op, key string, vote NodeVote)
}

// NopObserver is an Observer that does nothing. Embed it to implement only
// some events:
//
//	type lossAlarm struct{ redlock.NopObserver }
//
//	func (lossAlarm) Lost(ctx context.Context, key string, cause error) { page(key) }
type NopObserver struct{}

// AcquireStart returns ctx.
func (NopObserver) AcquireStart(ctx context.Context, _ string, _ bool) context.Context { return ctx }

// AcquireDone does nothing.
func (NopObserver) AcquireDone(context.Context, string, *Lock, time.Duration, error) {}

// Renewed does nothing.
func (NopObserver) Renewed(context.Context, string, error) {}

// Lost does nothing.
func (NopObserver) Lost(context.Context, string, error) {}

// NodeFailed does nothing.
func (NopObserver) NodeFailed(context.Context, string, string, NodeVote) {}

// WithObserver adds o to the observers: of the Client when given to New, of
// one acquisition and its Lock — its later renewals, loss and node errors
// included — when given to a call, beside the Client's. A nil o is refused
// with ErrInvalid. It is accepted per call rather than refused because New
// and the calls share one Option type, and an observer of one acquisition
// (tracing one job's lock) costs the calls without one nothing.
func WithObserver(o Observer) Option {
	return func(cfg *config) { cfg.observers = append(cfg.observers[:len(cfg.observers):len(cfg.observers)], o) }
}

// WithLogger logs failed acquisitions and renewals, lost locks, node
// errors and observers' panics as structured records through logger, for
// the Client (given to New) or one acquisition (given to a call), as
// WithObserver does. Without it nothing is logged; a nil logger is refused
// with ErrInvalid.
func WithLogger(logger *slog.Logger) Option {
	return func(cfg *config) {
		var o Observer
		if logger != nil {
			o = slogObserver{log: logger}
		}
		WithObserver(o)(cfg)
	}
}

// observers fans events out to every Observer of a Client or of one
// acquisition.
type observers []Observer

// Each event goes to every observer through call, which recovers a panic:
// an observer that panics misses that event, and the library goes on.

func (os observers) acquireStart(ctx context.Context, key string, wait bool) context.Context {
	for _, o := range os {
		os.call(ctx, "AcquireStart", key, func() {
			if next := o.AcquireStart(ctx, key, wait); next != nil {
				ctx = next
			}
		})
	}
	return ctx
}

func (os observers) acquireDone(ctx context.Context, key string, l *Lock, took time.Duration, err error) {
	for _, o := range os {
		os.call(ctx, "AcquireDone", key, func() { o.AcquireDone(ctx, key, l, took, err) })
	}
}

func (os observers) renewed(ctx context.Context, key string, err error) {
	for _, o := range os {
		os.call(ctx, "Renewed", key, func() { o.Renewed(ctx, key, err) })
	}
}

func (os observers) lost(ctx context.Context, key string, cause error) {
	for _, o := range os {
		os.call(ctx, "Lost", key, func() { o.Lost(ctx, key, cause) })
	}
}

func (os observers) nodeFailed(ctx context.Context, op, key string, v NodeVote) {
	for _, o := range os {
		os.call(ctx, "NodeFailed", key, func() { o.NodeFailed(ctx, op, key, v) })
	}
}

// call runs one observer's method f for an event of key, and recovers its
// panic: reported at Error through the loggers among os (WithLogger) —
// through slog.Default() if there are none, or if a logger panicked too.
func (os observers) call(ctx context.Context, method, key string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			os.reportPanic(ctx, method, key, r)
		}
	}()
	f()
}

func (os observers) reportPanic(ctx context.Context, method, key string, r any) {
	attrs := []slog.Attr{slog.String("method", method), slog.String("key", key), slog.Any("panic", r)}
	const msg = "redlock: an Observer panicked; recovered, the event is lost to it"
	logged := false
	defer func() {
		if recover() != nil || !logged {
			slog.Default().LogAttrs(context.Background(), slog.LevelError, msg, attrs...)
		}
	}()
	for _, o := range os {
		if s, ok := o.(slogObserver); ok {
			s.log.LogAttrs(ctx, slog.LevelError, msg, attrs...)
			logged = true
		}
	}
}

// nodeFailures reports the failed votes of a round of a's operation op to
// a's observers.
func nodeFailures[T any](ctx context.Context, a *acquisition, op string, t *quorum.Tally[T]) {
	c, os, key := a.c, a.cfg.observers, a.key
	if len(os) == 0 {
		return
	}
	for n, v := range t.Votes {
		// A node Unlock left to its acquire's late answer has not failed.
		if v.Outcome == quorum.Failed && v.Err != errInFlight {
			os.nodeFailed(ctx, op, key, NodeVote{Node: n, Addr: c.nodes[n].master.Name(), Outcome: v.Outcome, Err: c.explain(n, v.Err)})
		}
	}
}

// warn logs msg at Warn through every logger among os (WithLogger).
func (os observers) warn(msg string, attrs ...slog.Attr) {
	for _, o := range os {
		if s, ok := o.(slogObserver); ok {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, msg, attrs...)
		}
	}
}

// slogObserver logs what an operator needs to see: failures, never the
// healthy path. Records go through the event's context, so a handler may
// read what the caller or another observer put in it.
type slogObserver struct {
	NopObserver
	log *slog.Logger
}

// AcquireDone logs a failed acquisition: at Debug when one attempt was
// refused because others hold the key, every node answering (a contended
// TryLock: leaders polling in a loop would flood the log), at Warn when the
// masters themselves make it fail for good (see hopeless), at Info
// otherwise — failed nodes, a wait that gave up, a closed Client.
func (s slogObserver) AcquireDone(ctx context.Context, key string, _ *Lock, took time.Duration, err error) {
	if err == nil || errors.Is(err, ErrInvalid) {
		return
	}
	level := slog.LevelInfo
	var stop *stopError
	switch {
	case hopeless(err):
		level = slog.LevelWarn
	case contended(err) && !errors.As(err, &stop):
		level = slog.LevelDebug
	}
	s.log.LogAttrs(ctx, level, "redlock: lock not obtained", slog.String("key", key),
		slog.Duration("took", took), slog.Any("error", err))
}

func (s slogObserver) Renewed(ctx context.Context, key string, err error) {
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "redlock: renewal failed", slog.String("key", key), slog.Any("error", err))
	}
}

func (s slogObserver) Lost(ctx context.Context, key string, cause error) {
	s.log.LogAttrs(ctx, slog.LevelError, "redlock: lock lost", slog.String("key", key), slog.Any("cause", cause))
}

func (s slogObserver) NodeFailed(ctx context.Context, op, key string, v NodeVote) {
	s.log.LogAttrs(ctx, slog.LevelWarn, "redlock: node call failed", slog.String("op", op),
		slog.String("key", key), slog.Int("node", v.Node), slog.String("addr", v.Addr), slog.Any("error", v.Err))
}

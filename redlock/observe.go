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
// without observers (the default) pays one nil check per event.
type Observer interface {
	// AcquireStart is called when Lock, TryLock or Do begin to acquire key;
	// the context it returns (e.g. carrying a span) is used for the
	// acquisition's calls and passed to AcquireDone.
	AcquireStart(ctx context.Context, key string, wait bool) context.Context
	// AcquireDone is called once per AcquireStart, with the acquisition's
	// outcome: the lock (nil on failure), how long it took, and the error.
	AcquireDone(ctx context.Context, key string, l *Lock, took time.Duration, err error)
	// Renewed is called after each watchdog extension, err nil on success.
	Renewed(key string, err error)
	// Lost is called once when a held lock is lost (cause ErrLockLost).
	Lost(key string, cause error)
	// NodeFailed is called for each node call that failed or timed out;
	// op is "lock", "extend" or "unlock".
	NodeFailed(op, key string, vote NodeVote)
}

// WithObserver adds o to the Client's observers. Given to New only; other
// calls refuse it.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observers = append(c.observers[:len(c.observers):len(c.observers)], o) }
}

// WithLogger logs, through logger, acquisitions that failed, renewals that
// failed, locks lost and node errors, as structured records. Quiet by
// default: without it nothing is logged. Given to New only.
func WithLogger(logger *slog.Logger) Option {
	return func(c *config) {
		var o Observer
		if logger != nil {
			o = slogObserver{logger}
		}
		WithObserver(o)(c)
	}
}

// observers fans events out to every Observer of a Client.
type observers []Observer

func (os observers) acquireStart(ctx context.Context, key string, wait bool) context.Context {
	for _, o := range os {
		ctx = o.AcquireStart(ctx, key, wait)
	}
	return ctx
}

func (os observers) acquireDone(ctx context.Context, key string, l *Lock, took time.Duration, err error) {
	for _, o := range os {
		o.AcquireDone(ctx, key, l, took, err)
	}
}

func (os observers) renewed(key string, err error) {
	for _, o := range os {
		o.Renewed(key, err)
	}
}

func (os observers) lost(key string, cause error) {
	for _, o := range os {
		o.Lost(key, cause)
	}
}

// nodeFailures reports the failed votes of a round.
func nodeFailures[T any](c *Client, op, key string, t *quorum.Tally[T]) {
	if len(c.cfg.observers) == 0 {
		return
	}
	for n, v := range t.Votes {
		// A node Unlock left to its acquire's late answer has not failed.
		if v.Outcome == quorum.Failed && v.Err != errInFlight {
			for _, o := range c.cfg.observers {
				o.NodeFailed(op, key, NodeVote{Node: n, Addr: c.nodes[n].addr, Outcome: v.Outcome, Err: v.Err})
			}
		}
	}
}

// slogObserver logs what an operator needs to see: failures, never the
// healthy path.
type slogObserver struct{ log *slog.Logger }

func (s slogObserver) AcquireStart(ctx context.Context, _ string, _ bool) context.Context { return ctx }

func (s slogObserver) AcquireDone(ctx context.Context, key string, _ *Lock, took time.Duration, err error) {
	if err != nil && !errors.Is(err, ErrInvalid) {
		s.log.LogAttrs(ctx, slog.LevelInfo, "redlock: lock not obtained", slog.String("key", key),
			slog.Duration("took", took), slog.Any("error", err))
	}
}

func (s slogObserver) Renewed(key string, err error) {
	if err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "redlock: renewal failed", slog.String("key", key), slog.Any("error", err))
	}
}

func (s slogObserver) Lost(key string, cause error) {
	s.log.LogAttrs(context.Background(), slog.LevelError, "redlock: lock lost", slog.String("key", key), slog.Any("cause", cause))
}

func (s slogObserver) NodeFailed(op, key string, v NodeVote) {
	s.log.LogAttrs(context.Background(), slog.LevelWarn, "redlock: node call failed", slog.String("op", op),
		slog.String("key", key), slog.Int("node", v.Node), slog.String("addr", v.Addr), slog.Any("error", v.Err))
}

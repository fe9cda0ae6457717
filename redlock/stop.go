package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A stopError is the error of an acquisition that stopped before it
// succeeded: its context ended, its maximum wait ran out, or its Client
// closed. It is one line, starting with "redlock:" — the last attempt's
// error, then why the acquisition stopped — and matches both (errors.Is,
// errors.As): ctx.Err() (or ErrClosed), ErrNotObtained, and the last
// attempt's *QuorumError if there was one.
type stopError struct {
	op, key string
	why     error // ctx.Err() or ErrClosed
	cause   error // context.Cause, when it says more than why
	last    error // the last attempt's error (lastWhole), or ErrNotObtained if none ran
}

// stopped returns the error of a's acquisition when it stops waiting: why
// is ctx.Err() or ErrClosed, last the last attempt's error.
func (a *acquisition) stopped(ctx context.Context, why, last error) error {
	e := &stopError{op: a.kind.op(), key: a.key, why: why, last: last}
	if cause := context.Cause(ctx); cause != nil && cause != why && errors.Is(why, ctx.Err()) {
		e.cause = cause
	}
	return e
}

func (e *stopError) Error() string {
	var b strings.Builder
	if q := (*QuorumError)(nil); errors.As(e.last, &q) {
		b.WriteString(q.Error())
		b.WriteString("; gave up: ")
	} else {
		fmt.Fprintf(&b, "redlock: %s %s not obtained: ", e.op, shortKey(e.key))
	}
	if e.cause != nil {
		b.WriteString(oneLine(e.cause.Error()))
	} else {
		b.WriteString(strings.TrimPrefix(e.why.Error(), "redlock: "))
	}
	return b.String()
}

// Unwrap returns why the acquisition stopped, then the last attempt's error.
func (e *stopError) Unwrap() []error { return []error{e.why, e.last} }

// errMaxWait is the cause set on the context of a wait that WithMaxWait
// bounds; it matches context.DeadlineExceeded.
type errMaxWait time.Duration

func (e errMaxWait) Error() string {
	return fmt.Sprintf("the maximum wait (%v, WithMaxWait) ran out: context deadline exceeded", time.Duration(e))
}
func (errMaxWait) Unwrap() error { return context.DeadlineExceeded }

// oneLine keeps an error message on one line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// lasting reports whether a node's failed vote will fail the same way at
// every attempt, whatever the wait: the node cannot tell when it started
// (INFO refused to the user), it is a replica, or the server refuses the
// user the commands the library needs (NOPERM), or it is a cluster another
// member already reaches (ErrSameCluster), or it refuses to set up a
// connection for a reason only a change of settings mends (refusedSetup: a
// wrong password or DB, a failed TLS handshake). Timeouts, refused
// connections, restarts and held locks are not lasting: they heal.
func lasting(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrStartUnknown), errors.Is(err, ErrReplica), errors.Is(err, ErrSameCluster), refusedSetup(err):
		return true
	}
	var re redis.Error
	return errors.As(err, &re) && redis.HasErrorPrefix(re, "NOPERM")
}

// replicaError returns err, a node's error, as ErrReplica's when the node
// refused a write for being a replica (READONLY).
func replicaError(err error) error {
	var re redis.Error
	if errors.As(err, &re) && redis.HasErrorPrefix(re, "READONLY") {
		return fmt.Errorf("%w: %w", ErrReplica, err)
	}
	return err
}

// hopeless reports whether the failed attempt err can never be followed by
// one that wins, however long the caller waits: so many nodes fail for a
// lasting reason (see lasting) that the others cannot make a majority — or
// two members were found to be one cluster, which fails every acquisition
// of the Client from then on (ErrSameCluster).
func hopeless(err error) bool {
	var q *QuorumError
	if !errors.As(err, &q) || !errors.Is(q.Err, ErrNotObtained) {
		return false
	}
	if errors.Is(err, ErrSameCluster) {
		return true
	}
	n := lastingFailures(q)
	return n > 0 && len(q.Votes)-n < q.Need
}

func lastingFailures(q *QuorumError) int {
	n := 0
	for _, v := range q.Votes {
		if v.Outcome == Failed && lasting(v.Err) {
			n++
		}
	}
	return n
}

// contended reports whether err is one attempt's refusal in which no node
// failed: the key is held, or others wait for it.
func contended(err error) bool {
	var q *QuorumError
	if !errors.As(err, &q) || !errors.Is(q.Err, ErrNotObtained) {
		return false
	}
	for _, v := range q.Votes {
		if v.Outcome == Failed {
			return false
		}
	}
	return true
}

// hopelessNote says, for a *QuorumError that no wait can turn into a
// success (see hopeless), why Lock returned at once; else "".
func hopelessNote(q *QuorumError) string {
	if !hopeless(q) {
		return ""
	}
	return fmt.Sprintf("; not retried: %d of %d nodes fail for a reason waiting cannot change", lastingFailures(q), len(q.Votes))
}

// guardWait says, for a *QuorumError, when the grants of nodes still within
// the restart guard would make a majority: "" unless the round had enough
// such grants to win. left is each such node's time left; granted the
// grants that counted.
func guardWait(q *QuorumError) string {
	var left []time.Duration
	for _, v := range q.Votes {
		var g *guardError
		if v.Outcome == Failed && errors.As(v.Err, &g) {
			left = append(left, g.left)
		}
	}
	missing := q.Need - q.Granted
	if missing <= 0 || len(left) < missing {
		return ""
	}
	slices.Sort(left)
	return fmt.Sprintf("; %d of its grants came from masters within the restart guard: a majority counts in %v — wait, or vouch for brand-new masters with TrustStart (quorumlock trust)",
		len(left), left[missing-1].Round(time.Millisecond))
}

// A guardError is the error of a grant not counted because its node started
// less than the restart guard ago; it matches ErrNodeRestarted.
type guardError struct{ left time.Duration }

func (e *guardError) Error() string {
	return fmt.Sprintf("%v (%v more)", ErrNodeRestarted, e.left.Round(time.Millisecond))
}
func (e *guardError) Unwrap() error { return ErrNodeRestarted }

// lastWhole returns the failed attempt whose error a wait that ends now
// reports: err, the latest attempt's, unless ctx ended while it ran and
// cut votes of it short — those say only that the deadline came, where
// last, the attempt before (ErrNotObtained before the first), heard from
// every node and says why the lock was not obtained. A young master's
// first calls, which read when it started, are slow enough for a deadline
// to cut an attempt that way.
func lastWhole(ctx context.Context, err, last error) error {
	var cut, before *QuorumError
	if ctx.Err() == nil || !errors.As(err, &cut) || !errors.As(last, &before) {
		return err
	}
	for _, v := range cut.Votes {
		if v.Outcome == Failed && errors.Is(v.Err, ctx.Err()) {
			return last
		}
	}
	return err
}

package redlock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seed818c56a1/quorumlock/quorum"
)

var (
	// ErrNotObtained is returned by Lock, TryLock and Do (and the other
	// acquisitions) when no majority of nodes granted the lock within its
	// validity. errors.As gives the *QuorumError with each node's vote; when
	// Lock gave up because its context ended, the error also matches
	// ctx.Err(), on one line.
	ErrNotObtained = errors.New("redlock: lock not obtained")

	// ErrLockLost is returned by Extend and Unlock, and set as Err() and
	// Do's result, when the quorum no longer holds the lock: renewal could
	// not reach a majority before the validity ran out, or a majority of
	// nodes confirmed that the lock's value was gone. Work done under the
	// lock may have overlapped with another holder's.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrNotHeld is returned by Unlock and Extend on a lock that was already
	// released, and is Err() of a released lock.
	ErrNotHeld = errors.New("redlock: lock not held")

	// ErrClosed is returned by every call on a closed Client, and is Err() of
	// the locks that were still held when it closed.
	ErrClosed = errors.New("redlock: client closed")

	// ErrNodeRestarted is the error of a node's vote, within a *QuorumError,
	// when the node granted but its server process started less than the
	// restart guard ago (WithRestartGuard; by default the longest TTL in use
	// on the key, see MaxRestartGuard) — restarted, or new to this Client:
	// it may have lost a lock that a holder still holds, so its grant is not
	// counted. The error says how much longer the node must be up.
	ErrNodeRestarted = errors.New("redlock: node started within the restart guard; grant not counted")

	// ErrStartUnknown is the error of a node's vote, within a *QuorumError,
	// when restart detection is on and the node granted but could not say
	// when it started — e.g. an ACL user without INFO or LASTSAVE: its grant
	// is not counted, since it may come from a master that just restarted
	// without its data.
	ErrStartUnknown = errors.New("redlock: node cannot report when it started; grant not counted")

	// ErrReplica is the error of a node's vote, within a *QuorumError, when
	// the node is a replica: the quorum needs independent masters, and a
	// replica beside its master would be two votes from one data set. A
	// node's role is read with the grant that reports its start — at the
	// Client's first contact with each server process — or, with restart
	// detection off, asked (ROLE) at the first acquisition on it.
	ErrReplica = errors.New("redlock: node is a replica, not a master")

	// ErrInvalid is matched by every error that refuses bad input to New or
	// to a call — a nil ctx, a bad key, more than MaxKeys keys, an option out
	// of range or above MaxDuration; nothing is changed and nothing is sent.
	ErrInvalid = errors.New("redlock: invalid argument")
)

// errNilContext refuses a nil context.Context, at every call that takes one.
var errNilContext = invalid("nil context.Context")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// An Outcome is one node's answer in a quorum round, as a NodeVote tells
// it: Pending, Granted, Refused or Failed. It is quorum.Outcome, named here
// so that reading a *QuorumError or a NodeVote needs no other import.
type Outcome = quorum.Outcome

// The outcomes of a node's vote.
const (
	// Pending: the node had not answered when the round was decided.
	Pending = quorum.Pending
	// Granted: the node did what was asked.
	Granted = quorum.Granted
	// Refused: the node answered and declined — the key is held by
	// another, or our lock is no longer there. A known answer.
	Refused = quorum.Refused
	// Failed: the call returned an error or ran out of time (NodeVote.Err
	// says which); whether the node applied it is unknown.
	Failed = quorum.Failed
)

// A NodeVote is one node's answer in a quorum round.
type NodeVote struct {
	Node    int     // index in the slice given to New
	Addr    string  // the node's address, when the client exposes one
	Outcome Outcome // Pending, Granted, Refused or Failed
	Err     error   // why the call failed; nil for grants and refusals
}

// A QuorumError reports a round that did not reach the outcome its
// operation needed: an acquisition without a majority (it matches
// ErrNotObtained), an extension or unlock that found the lock gone (it matches
// ErrLockLost), or a round whose outcome no majority confirmed either way
// (it matches neither: some nodes did not answer in time).
type QuorumError struct {
	Op      string // "lock", "extend" or "unlock"
	Key     string
	Err     error // ErrNotObtained, ErrLockLost, or nil when the outcome is unknown
	Granted int
	Need    int
	Votes   []NodeVote
}

func (e *QuorumError) Error() string {
	var b strings.Builder
	b.WriteString("redlock: ")
	b.WriteString(e.Op)
	fmt.Fprintf(&b, " %s ", shortKey(e.Key))
	switch {
	case errors.Is(e.Err, ErrNotObtained):
		b.WriteString("not obtained")
	case errors.Is(e.Err, ErrLockLost):
		b.WriteString("found the lock lost")
	default:
		b.WriteString("not confirmed by a majority")
	}
	counts := map[quorum.Outcome]int{}
	for _, v := range e.Votes {
		counts[v.Outcome]++
	}
	fmt.Fprintf(&b, ": %d of %d granted", counts[quorum.Granted], len(e.Votes))
	for _, o := range []quorum.Outcome{quorum.Refused, quorum.Failed, quorum.Pending} {
		if counts[o] > 0 {
			fmt.Fprintf(&b, ", %d %s", counts[o], o)
		}
	}
	fmt.Fprintf(&b, ", need %d", e.Need)
	for _, v := range e.Votes {
		if v.Err != nil {
			fmt.Fprintf(&b, "; node %d (%s): %s", v.Node, v.Addr, oneLine(v.Err.Error()))
		}
	}
	b.WriteString(guardWait(e))
	b.WriteString(hopelessNote(e))
	return b.String()
}

// Unwrap returns the sentinel error, if any, followed by every node's error.
func (e *QuorumError) Unwrap() []error {
	errs := make([]error, 0, len(e.Votes)+1)
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for _, v := range e.Votes {
		if v.Err != nil {
			errs = append(errs, v.Err)
		}
	}
	return errs
}

// quorumError records tally t of an op on key as a *QuorumError.
func quorumError[T any](c *Client, op, key string, sentinel error, t *quorum.Tally[T]) *QuorumError {
	e := &QuorumError{Op: op, Key: key, Err: sentinel, Granted: t.Count(quorum.Granted), Need: t.Need,
		Votes: make([]NodeVote, len(t.Votes))}
	for i, v := range t.Votes {
		e.Votes[i] = NodeVote{Node: i, Addr: c.nodes[i].addr, Outcome: v.Outcome, Err: c.explain(i, v.Err)}
	}
	return e
}

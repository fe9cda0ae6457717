package redlock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// Every error the package returns is one line, starts with "redlock:" and
// works with errors.Is and errors.As.
var (
	// ErrNotObtained is returned by Lock, TryLock, Do and the other acquisitions
	// when no majority granted the lock within its validity; errors.As gives the
	// *QuorumError, whose votes may match ErrNodeRestarted, ErrStartUnknown,
	// ErrReplica or ErrSameCluster. An acquisition that stopped because its
	// ctx ended (or WithMaxWait ran out) says so after the last attempt's
	// error — the attempt before it when the end cut that one's votes short
	// — on the same line, and matches ctx.Err() as well; one stopped by
	// Close matches ErrClosed as well.
	ErrNotObtained = errors.New("redlock: lock not obtained")

	// ErrLockLost is returned by Extend, Unlock, Do and Run, and is Err() of a
	// lost lock, when the quorum no longer holds it: renewal could not reach
	// a majority before the validity ran out, or a majority of nodes
	// confirmed that the lock's value was gone. Work done under the lock may
	// have overlapped another holder's.
	ErrLockLost = errors.New("redlock: lock lost")

	// ErrNotHeld is returned by Unlock and Extend on a lock that was already
	// released, and is Err() of a released lock.
	ErrNotHeld = errors.New("redlock: lock not held")

	// ErrClosed is returned by every call on a closed Client, and is Err() of
	// the locks that were still held when it closed.
	ErrClosed = master.ErrClosed

	// ErrNodeRestarted is a node's vote error, in a *QuorumError, when its grant
	// was not counted because its process started within the restart guard —
	// restarted, or new to this Client — so it may have lost a lock a holder
	// still holds. The error says how much longer the node must be up, and a
	// waiting acquisition waits for it.
	ErrNodeRestarted = errors.New("redlock: node started within the restart guard; grant not counted")

	// ErrStartUnknown is a node's vote error, in a *QuorumError, when restart
	// detection is on and its grant was not counted because it could not say
	// when it started (e.g. an ACL user without INFO or LASTSAVE): the grant
	// may come from a master restarted without its data. It is lasting: a
	// waiting acquisition returns at once when it leaves no majority.
	ErrStartUnknown = master.ErrStartUnknown

	// ErrReplica is a node's vote error, in a *QuorumError (and an error of
	// TrustStart and CheckNew), when the node is a replica, not a master: a
	// replica beside its master would be two votes from one data set. The
	// role is read with the grant that reports a server's start or, with
	// restart detection off, asked (ROLE) at the first acquisition on it.
	// It is lasting, as ErrStartUnknown is.
	ErrReplica = master.ErrReplica

	// ErrSameCluster is the error of every acquisition, and of every call to
	// the two members concerned, once a Client has found two of its members to
	// be one Redis Cluster — a cluster given twice through seeds New could not
	// tell apart (member A seeded with one node, member B with another; or a
	// plain client of a cluster node beside a cluster client of that cluster),
	// or one Sentinel master set given twice (two failover clients of it,
	// found by the master they reach). The quorum counts independent masters,
	// so that configuration is invalid: neither member is counted again, and
	// no lock is granted until the Client is built with each cluster once. It
	// is a lasting failure: a waiting acquisition returns it at once. Two
	// members are found to be one when their reads of the node IDs (started
	// by New) meet; until its read has answered, a member's replies are not
	// counted.
	ErrSameCluster = master.ErrSameCluster

	// ErrInvalid is matched by every error that refuses bad input to New or to
	// a call; nothing is changed and nothing is sent. Bad input includes a nil
	// ctx at any call, an empty or too long key, more than MaxKeys keys, a
	// duration option above MaxDuration, and every refusal named in the
	// options' and calls' comments.
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
	Node int // index in the slice given to New
	// Addr is the node's address, when the client exposes one; for a
	// Sentinel failover client, "sentinel master" followed by the address
	// of the master it last dialed, once it has dialed one.
	Addr    string
	Outcome Outcome // Pending, Granted, Refused or Failed
	Err     error   // why the call failed; nil for grants and refusals
}

// A QuorumError reports a round that missed the outcome its operation
// needed, with every node's vote: an acquisition without a majority (it
// matches ErrNotObtained), an extension or unlock that found the lock gone
// (ErrLockLost), or a round whose outcome no majority confirmed either way
// (neither: some nodes did not answer in time). Unwrap gives the sentinel
// and every vote's error. A vote that timed out carries its node's real
// failure once known ("connection refused" rather than only "no answer
// within the node timeout"), found by one dial with the redis client's own
// dialer.
type QuorumError struct {
	Op      string     // "lock", "acquire" (a permit), "extend" or "unlock"
	Key     string     // the key (keys joined by commas; a semaphore's name)
	Err     error      // ErrNotObtained, ErrLockLost, or nil when the outcome is unknown
	Granted int        // how many nodes granted
	Need    int        // how many grants the round needed: a majority
	Votes   []NodeVote // every node's vote, in the order given to New
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
		e.Votes[i] = NodeVote{Node: i, Addr: c.nodes[i].master.Name(), Outcome: v.Outcome, Err: c.explain(i, v.Err)}
	}
	return e
}

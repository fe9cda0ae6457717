package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// MaxLimit bounds the limit of a semaphore (Acquire): each permit is a key
// on the nodes, and every attempt reads all of them.
const MaxLimit = 1024

// Acquire takes one of limit permits of name, waiting in line as Lock
// does, and returns as Lock does when ctx ends, the Client closes or no
// majority can ever answer. Permit i is a mutex on a key of its own; the
// Lock holds one permit (Permit), granted by a majority, so no more than
// limit holders hold at once, and each permit is fenced on its own (Token).
// Freed permits go to the oldest waiters. An owner (WithOwner) holds at
// most one permit of a name: a nested Acquire adds a hold on it.
//
// Every holder of name must use the same limit: a node refuses another
// limit while a permit of the recorded one is held there, so an Acquire
// with another limit than the current holders' fails with ErrInvalid,
// having changed nothing. An empty or too long name, or a limit outside
// [1, MaxLimit], is refused with ErrInvalid, nothing sent.
func (c *Client) Acquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	a, err := c.newPermitAcquisition(ctx, name, limit, opts)
	if err != nil {
		return nil, err
	}
	return a.waitInLine(ctx)
}

// TryAcquire makes one attempt to take one of limit permits of name, as
// TryLock does: with waiters in line it takes a permit only if more are
// free than wait. It refuses the input Acquire refuses.
func (c *Client) TryAcquire(ctx context.Context, name string, limit int, opts ...Option) (*Lock, error) {
	a, err := c.newPermitAcquisition(ctx, name, limit, opts)
	if err != nil {
		return nil, err
	}
	return a.tryOnce(ctx)
}

// checkLimit refuses a semaphore's bad limit (its name is checked as a key).
func checkLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return invalid("limit %d must be in [1, %d]", limit, MaxLimit)
	}
	return nil
}

// PermitKeys returns the names the library uses on the nodes for permit i
// of the semaphore name under prefix: <prefix>{<tag>}:permit:<i> and its
// :fence counter, beside the name's :permits:queue, :permits:leases and
// :permits:free channel, <tag> as Keys makes it. A permit has no readers:
// the Readers name is never written. It checks nothing.
func PermitKeys(prefix, name string, i int) KeyNames {
	base := permitBase(prefix, name)
	lock := base + ":permit:" + strconv.Itoa(i)
	shared := base + ":permits"
	return KeyNames{Lock: lock, Fence: lock + ":fence", Queue: shared + ":queue", Leases: shared + ":leases",
		Readers: lock + ":readers", Channel: shared + ":free"}
}

// LimitKey returns the name of the record of the limit that the holders of
// the semaphore name were granted with (a string holding the limit).
func LimitKey(prefix, name string) string { return permitBase(prefix, name) + ":permits:limit" }

func permitBase(prefix, name string) string { return prefix + "{" + hashTag(name) + "}" }

// newPermitAcquisition is newAcquisition for a permit of the semaphore
// name: its names on the nodes are every permit's, in order.
func (c *Client) newPermitAcquisition(ctx context.Context, name string, limit int, opts []Option) (*acquisition, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	a, err := c.newAcquisition(ctx, []string{name}, opts, permitKind{limit})
	if err != nil {
		return nil, err
	}
	a.kss = make(keysets, limit)
	for i := range a.kss {
		a.kss[i] = PermitKeys(a.cfg.prefix, name, i)
	}
	a.prefer = rand.IntN(limit)
	return a, nil
}

// A permitKind is the kind of a holding of one permit of a semaphore of
// limit permits (holdKind). A permit has no readers.
type permitKind struct{ limit int }

func (k permitKind) op() string                 { return "acquire" }
func (k permitKind) member(owner string) string { return owner }
func (k permitKind) leaveMark() string          { return "" }

// line: a semaphore's one, shared by every permit (its first permit's
// names).
func (k permitKind) line(kss keysets) keysets { return kss[:1] }

// calls: every node grants a free permit, the first from a.prefer, so that
// nodes in one state pick the same.
func (k permitKind) calls(a *acquisition, ticket string) []scriptCall {
	cfg := &a.cfg
	keys := make([]string, 0, 2*k.limit+3)
	for _, p := range a.kss {
		keys = append(keys, p.Lock)
	}
	for _, p := range a.kss {
		keys = append(keys, p.Fence)
	}
	keys = append(keys, a.kss[0].Queue, a.kss[0].Leases, LimitKey(cfg.prefix, a.key))
	args := commonArgs(3, a.id.owner, a.id.hold, cfg.ttl, cfg.retention, ticket, cfg.queueLease())
	args = append(args, k.limit, a.prefer, permitBase(cfg.prefix, a.key)+":permit:")
	base := newScriptCall(permitScript, keys, args...)
	return a.perNode(base)
}

// valuesPerVote: the token and the permit, and a spare.
func (k permitKind) valuesPerVote(*acquisition) int { return 3 }

// vote: a grant's value is the token and the permit; a refusal's, the
// holder's remaining lease, or an errLimit.
func (k permitKind) vote(a *acquisition, into []int64, n int, reply []any, err error) quorum.Vote[[]int64] {
	if v, ok := limitVote(reply, err, k.limit); ok {
		return v
	}
	return a.readVote(into, n, reply, err, 2, false)
}

func (k permitKind) decided() func(*quorum.Tally[[]int64]) bool { return permitDecided }

// won: the permit granted most, held by at on that permit alone.
func (k permitKind) won(a, at *acquisition, t *quorum.Tally[[]int64]) (*acquisition, int, quorum.Tally[[]int64]) {
	permit, won := a.winner(t)
	return at.forKeys(at.kss[permit : permit+1]), permit, won
}

// undoOthers: a semaphore's grants of other permits.
func (k permitKind) undoOthers(ctx context.Context, at *acquisition, t *quorum.Tally[[]int64], permit int) {
	at.c.spawn(func() { at.undo(ctx, t, permit) })
}

// grantedOn: the permit v granted, or — a vote not granted may have left
// any — all of them.
func (k permitKind) grantedOn(a *acquisition, v quorum.Vote[[]int64]) *acquisition {
	if v.Outcome != quorum.Granted {
		return a
	}
	p := k.permitOf(v)
	return a.forKeys(a.kss[p : p+1])
}

func (k permitKind) permitOf(v quorum.Vote[[]int64]) int { return int(v.Value[permitIndex]) }
func (k permitKind) wakeAfterRefusal() bool              { return false }
func (k permitKind) clockTokens() bool                   { return false }

// releaseCall: release.lua's, as a writer's of the permit held.
func (k permitKind) releaseCall(a *acquisition, kind releaseKind, tokens []int64) *scriptCall {
	return a.wreleaseCall(kind, tokens)
}

// lateTokens: none, for a late answer's release may be of every permit.
func (k permitKind) lateTokens(*Lock) []int64 { return nil }

// extendArgs: the mark carries the limit, and the third key is the limit
// record, kept while the permit is.
func (k permitKind) extendArgs(l *Lock) (mark, record string) {
	return "p" + strconv.Itoa(k.limit), LimitKey(l.acq.cfg.prefix, l.acq.key)
}

// permitIndex is the position of the permit number in the Value of a
// permit.lua grant, {token, permit}; a refusal's Value is {shortest
// remaining lease}.
const permitIndex = 1

// permitDecided ends a round once one permit has a majority of grants, or
// no permit can reach one any more.
func permitDecided(t *quorum.Tally[[]int64]) bool {
	best := 0
	for _, n := range grantsPerPermit(t) {
		best = max(best, n)
	}
	return best >= t.Need || best+t.Count(quorum.Pending) < t.Need
}

func grantsPerPermit(t *quorum.Tally[[]int64]) map[int]int {
	m := map[int]int{}
	for _, v := range t.Votes {
		if v.Outcome == quorum.Granted {
			m[int(v.Value[permitIndex])]++
		}
	}
	return m
}

// mostGranted returns the permit with the most grants, if any was granted.
func mostGranted(t *quorum.Tally[[]int64]) (permit int, ok bool) {
	best := 0
	for p, n := range grantsPerPermit(t) {
		if n > best || (n == best && p < permit) {
			permit, best = p, n
		}
	}
	return permit, best > 0
}

// winner returns the permit granted most, and the round's tally as that
// permit's: a grant of another permit counts as a failure there. The next
// round tries that permit first.
func (a *acquisition) winner(t *quorum.Tally[[]int64]) (int, quorum.Tally[[]int64]) {
	permit, ok := mostGranted(t)
	if ok {
		a.prefer = permit // where the next round most likely agrees
	}
	won := *t
	won.Votes = slices.Clone(t.Votes)
	for n, v := range won.Votes {
		if v.Outcome == quorum.Granted && int(v.Value[permitIndex]) != permit {
			won.Votes[n] = quorum.Vote[[]int64]{Outcome: quorum.Failed,
				Err: fmt.Errorf("redlock: granted permit %d, not %d", v.Value[permitIndex], permit)}
		}
	}
	return permit, won
}

// errLimit marks a node's refusal because its holders have another limit
// (recorded) than the attempt's (asked).
type errLimit struct{ recorded, asked int64 }

func (e errLimit) Error() string {
	return fmt.Sprintf("redlock: held here with limit %d", e.recorded)
}

// limitVote reads permit.lua's {-1, recorded limit} to an attempt with
// limit asked: a refusal, with nothing written.
func limitVote(reply []any, err error, asked int) (quorum.Vote[[]int64], bool) {
	if err != nil {
		return quorum.Vote[[]int64]{}, false
	}
	if code, ok := replyInt(reply, 0); !ok || code != -1 {
		return quorum.Vote[[]int64]{}, false
	}
	recorded, _ := replyInt(reply, 1)
	return quorum.Vote[[]int64]{Outcome: quorum.Refused, Value: []int64{0}, Err: errLimit{recorded, int64(asked)}}, true
}

// limitRefusal returns a node's refusal because of another limit, if any.
func limitRefusal(t *quorum.Tally[[]int64]) (errLimit, bool) {
	for _, v := range t.Votes {
		var e errLimit
		if errors.As(v.Err, &e) {
			return e, true
		}
	}
	return errLimit{}, false
}

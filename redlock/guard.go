package redlock

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// The default restart guard (no WithRestartGuard): a node that restarted
// empty may have lost a lease of any client, whatever TTL the client asking
// uses. The guard is therefore the longest TTL in use on the key, learnt
// from the other nodes, bounded by MaxRestartGuard; the argument is in
// docs/SAFETY.md, "Restarts".

// MaxRestartGuard bounds the default restart guard: a node up that long
// counts at once (unless the acquisition's own TTL is longer), and when no
// node up that long, nor a vouched one, answers a round, young nodes count
// after it. Leases with a longer TTL need WithRestartGuard, at least that
// TTL, on every client of the masters.
const MaxRestartGuard = time.Minute

// oldAge is how long a node must have been up to count at once under the
// default guard, for an acquisition with ttl: MaxRestartGuard, or ttl if
// longer.
func oldAge(ttl time.Duration) time.Duration { return max(MaxRestartGuard, ttl) }

// A guardRound is what one acquisition round learns, under the default
// guard, about the TTLs in use on its keys: the longest record reported,
// and whether a node old enough to have kept every live lease of the key
// (up for oldAge, or vouched for) reported one.
type guardRound struct {
	mu       sync.Mutex
	longest  time.Duration
	fromOld  bool
	deferred int // grants of young nodes awaiting the round's records
}

// heard records a node's TTL record; old says the node is up for oldAge.
// A nil guardRound (an acquisition outside any attempt) records nothing.
func (g *guardRound) heard(record time.Duration, old bool) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.longest = max(g.longest, record)
	g.fromOld = g.fromOld || old
}

func (g *guardRound) deferGrant() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deferred++
}

// decided wraps a round's decision: while a young node's grant awaits the
// records of the others, the round waits for every answer (or the node
// timeout) before it decides.
func (g *guardRound) decided(inner func(*quorum.Tally[[]int64]) bool) func(*quorum.Tally[[]int64]) bool {
	return func(t *quorum.Tally[[]int64]) bool {
		g.mu.Lock()
		waiting := g.deferred > 0
		g.mu.Unlock()
		if waiting && t.Count(quorum.Pending) > 0 {
			return false
		}
		if inner == nil {
			return t.Settled()
		}
		return inner(t)
	}
}

// guard is the round's restart guard for an acquisition with ttl: the
// longest TTL recorded by the nodes that answered, at least ttl, at most
// oldAge — and oldAge itself when no old node answered, since then every
// node that kept a live lease may have restarted.
func (g *guardRound) guard(ttl time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return defaultGuard(ttl, g.longest, g.fromOld)
}

// defaultGuard is the default restart guard for an acquisition with ttl
// whose nodes record longest as the longest TTL in use on the key, when
// a node old enough to have kept every live lease answered (fromOld) or
// not; ViewRestartGuard shows it.
func defaultGuard(ttl, longest time.Duration, fromOld bool) time.Duration {
	if !fromOld {
		return oldAge(ttl)
	}
	return max(ttl, min(longest, oldAge(ttl)))
}

// counted returns nil if the server whose start state is st has been up
// for guard; else why its grants do not count yet.
func counted(st master.StartState, guard time.Duration, now time.Time) error {
	if st.RunID == "" {
		return fmt.Errorf("%w: no start reported yet", ErrStartUnknown)
	}
	if left := st.Left(guard, now); left > 0 {
		return &guardError{left: left}
	}
	return nil
}

// recordOf reads a TTL record in ms: -1 is a hold that records none
// (readers, an older version's lock), read as MaxRestartGuard.
func recordOf(ms int64) time.Duration {
	if ms < 0 {
		return MaxRestartGuard
	}
	return time.Duration(ms) * time.Millisecond
}

// A youngGrant is the vote error of a grant from a node up for less than
// oldAge but at least the acquisition's TTL: whether it counts depends on
// the records of the round's other nodes (resolve).
type youngGrant struct{ st master.StartState }

func (y *youngGrant) Error() string {
	return "redlock: young node's grant, pending the round's TTL records"
}

// resolve counts or refuses each young node's grant of t once the round's
// records are in.
func (g *guardRound) resolve(t *quorum.Tally[[]int64], ttl time.Duration, now time.Time) {
	guard := g.guard(ttl)
	for i, v := range t.Votes {
		if v.Outcome != quorum.Failed {
			continue // y below escapes: not declared for every vote
		}
		var y *youngGrant
		if !errors.As(v.Err, &y) {
			continue
		}
		if err := counted(y.st, guard, now); err != nil {
			t.Votes[i].Err = fmt.Errorf("%w; the longest TTL in use on the key may be %v (MaxRestartGuard %v)", err, guard, MaxRestartGuard)
			continue
		}
		t.Votes[i] = quorum.Vote[[]int64]{Outcome: quorum.Granted, Value: v.Value}
	}
}

// admitDefault decides, under the default guard, whether a grant of the
// server whose state is st counts for an acquisition with ttl: at once if
// it is old, never in this round if it has been up for less than ttl, and
// otherwise once the round's records are in (a *youngGrant).
func (g *guardRound) admitDefault(st master.StartState, ttl time.Duration, now time.Time) error {
	if err := counted(st, ttl, now); err != nil {
		return err
	}
	if err := counted(st, oldAge(ttl), now); err == nil || g == nil {
		return err
	}
	g.deferGrant()
	return &youngGrant{st}
}

// anyYoung reports whether c knows a server of a node to be young: then,
// under the default guard, every node is asked for its start and the keys'
// TTL records, so that the young server's grants count by them. A node not
// met yet is asked anyway (LastSaved); one that never answers (down) costs
// the others nothing.
func (c *Client) anyYoung(ttl time.Duration, now time.Time) bool {
	for _, n := range c.nodes {
		if n.master.AnyYoung(oldAge(ttl), now) {
			return true
		}
	}
	return false
}

// admit decides whether node n's grant, reporting s, counts: under an
// explicit guard once the node has been up for it, under the default one
// as admitDefault says. It records what s says of the node's start and the
// key's TTLs.
func (a *acquisition) admit(n int, s master.StartInfo) error {
	cfg := &a.cfg
	guard := cfg.restartGuard()
	if guard == 0 {
		return nil
	}
	now := cfg.clock.Now()
	st, err := a.c.nodes[n].master.Learn(s, now)
	if err != nil {
		return err
	}
	if !cfg.defaultGuard() {
		return counted(st, guard, now)
	}
	if s.HasRecord {
		a.gr.heard(recordOf(s.RecordMS), st.Old(oldAge(cfg.ttl), now))
	}
	return a.gr.admitDefault(st, cfg.ttl, now)
}

// heardRefusal records what node n's refusal says of its start and the
// key's TTLs, under the default guard: {0, hint, start_info...}.
func (a *acquisition) heardRefusal(n int, reply []any) {
	cfg := &a.cfg
	if !cfg.defaultGuard() || len(reply) < 3 {
		return
	}
	s := master.StartFields(reply[2:])
	now := cfg.clock.Now()
	if st, err := a.c.nodes[n].master.Learn(s, now); err == nil && s.HasRecord {
		a.gr.heard(recordOf(s.RecordMS), st.Old(oldAge(cfg.ttl), now))
	}
}

// resolveGuard settles the young nodes' grants of an attempt's tally t.
func (a *acquisition) resolveGuard(t *quorum.Tally[[]int64]) {
	if a.cfg.defaultGuard() {
		a.gr.resolve(t, a.cfg.ttl, a.cfg.clock.Now())
	}
}

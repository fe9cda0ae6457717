package redlock

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// A MasterStart is what one master says of its server process, as a tool
// reads it: INFO server's uptime_in_seconds, and whether TrustStart vouched
// for the process (TrustKey, or TrustKeyFor on a cluster member).
type MasterStart struct {
	Known   bool          // the master answered with its start; false: unreachable, or it would not say
	Uptime  time.Duration // uptime_in_seconds
	Vouched bool          // TrustStart vouched for the running process
}

// A GuardView is how the restart guard stands, for a new acquisition, over
// the masters of a Client: what ViewRestartGuard returns.
type GuardView struct {
	Guard time.Duration // the guard their grants are held to now; 0: restart detection is off
	// Left is, per master in the order given, how long until its grants
	// count: 0 once they do (up for Guard, or vouched for), and 0 for a
	// master whose start is not known (see Unknown).
	Left    []time.Duration
	Counted int // masters whose grants count now
	Unknown int // masters whose start is not known: their grants do not count
	Need    int // a majority of the masters
	// Wait is how long until a majority counts, as the masters age without
	// restarting (the default guard shrinks once one of them is old): 0 if
	// a majority counts now, -1 if the masters whose start is known are too
	// few ever to make one.
	Wait time.Duration
}

// ViewRestartGuard returns how the restart guard stands for an acquisition
// with opts (those given to New, then to the call: WithTTL,
// WithRestartGuard) over masters, whose records say the longest TTL in use
// on the key is longest (0 when nothing holds it; MaxRestartGuard when a
// hold records none). It sends nothing. Lock, TryLock and every other
// acquisition hold a round's grants to the same computation (guard.go,
// internal/master/starts.go), so a tool that shows it — quorumlock status, and run's exit
// status 76 — agrees with them: under the default guard, MaxRestartGuard
// (or the TTL if longer) while no master has been up that long or is
// vouched for, else the longest TTL in use, at least the TTL. Bad opts
// return ErrInvalid.
func ViewRestartGuard(masters []MasterStart, longest time.Duration, opts ...Option) (GuardView, error) {
	cfg, err := defaults().with(opts)
	if err != nil {
		return GuardView{}, err
	}
	if len(masters) == 0 {
		return GuardView{}, invalid("no masters")
	}
	now := time.Now()
	states := make([]*master.StartState, len(masters))
	anyOld := false
	for i, m := range masters {
		if m.Known {
			states[i] = m.state(now)
			anyOld = anyOld || states[i].Old(oldAge(cfg.ttl), now)
		}
	}
	v := GuardView{Need: quorum.Majority(len(masters)), Left: make([]time.Duration, len(masters))}
	switch {
	case !cfg.detectRestarts():
	case !cfg.defaultGuard():
		v.Guard = cfg.restartGuard()
	default:
		v.Guard = defaultGuard(cfg.ttl, longest, anyOld)
	}
	v.tally(states, now)
	if !anyOld && cfg.defaultGuard() && v.Guard > 0 && v.Wait > 0 {
		v.Wait = v.agedWait(states, cfg.ttl, longest, now)
	}
	return v, nil
}

// state is the start state a Client learns from m, read at now.
func (m MasterStart) state(now time.Time) *master.StartState {
	st := &master.StartState{RunID: "?", Started: now.Add(-max(0, m.Uptime-master.UptimeSlack))}
	if m.Vouched {
		st.Started = time.Time{}
	}
	return st
}

// tally sets Left, Counted, Unknown and Wait under v.Guard; states[i] is
// nil for a master whose start is not known.
func (v *GuardView) tally(states []*master.StartState, now time.Time) {
	var left []time.Duration
	for i, st := range states {
		if st == nil {
			v.Unknown++
			continue
		}
		var g *guardError
		if err := counted(*st, v.Guard, now); errors.As(err, &g) {
			v.Left[i] = g.left
		}
		if v.Left[i] == 0 {
			v.Counted++
		}
		left = append(left, v.Left[i])
	}
	slices.Sort(left)
	v.Wait = -1
	if len(left) >= v.Need {
		v.Wait = left[v.Need-1]
	}
}

// agedWait is Wait under the default guard while no master is old: the
// guard is oldAge(ttl) until the oldest master is, and shrinks then.
func (v *GuardView) agedWait(states []*master.StartState, ttl, longest time.Duration, now time.Time) time.Duration {
	first := time.Duration(math.MaxInt64) // until the oldest known master is old
	for _, st := range states {
		if st != nil {
			first = min(first, st.Left(oldAge(ttl), now))
		}
	}
	then := GuardView{Guard: defaultGuard(ttl, longest, true), Need: v.Need, Left: make([]time.Duration, len(states))}
	then.tally(states, now.Add(first))
	return first + then.Wait
}

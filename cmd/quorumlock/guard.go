package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// A masterAge is one master's age against the restart guard.
type masterAge struct {
	RunID           string `json:"run_id,omitempty"`
	UptimeSeconds   int64  `json:"uptime_s"`
	Vouched         bool   `json:"vouched"`       // 'quorumlock trust' vouched for this process
	GuardLeftMillis int64  `json:"guard_left_ms"` // until its grants count; 0 once they do
	StartError      string `json:"start_error,omitempty"`
}

// A guardStatus is the masters' age against the restart guard: whether a
// majority of them counts for a new lock now, or in how long.
type guardStatus struct {
	GuardMillis int64 `json:"guard_ms"`
	Counted     int   `json:"counted"` // masters whose grants count now
	WaitMillis  int64 `json:"wait_ms"` // until a majority counts; 0 if one does
	Unknown     int   `json:"unknown"` // masters that did not say when they started
}

// setStart records node i's start under guard.
func (st *lockStatus) setStart(i int, s nodeStart, guard time.Duration) {
	n := &st.Nodes[i].masterAge
	if s.err != nil {
		n.StartError = s.err.Error()
		return
	}
	n.RunID, n.UptimeSeconds, n.Vouched = s.runID, int64(s.uptime/time.Second), s.vouched
	n.GuardLeftMillis = s.guardLeft(guard).Milliseconds()
}

// tallyGuard counts the masters that count under guard, and how long until
// a majority does.
func (st *lockStatus) tallyGuard(guard time.Duration) {
	g := &guardStatus{GuardMillis: guard.Milliseconds()}
	var left []int64
	for _, n := range st.Nodes {
		switch {
		case !n.Reachable || n.StartError != "":
			g.Unknown++
		case n.GuardLeftMillis == 0:
			g.Counted++
			left = append(left, 0)
		default:
			left = append(left, n.GuardLeftMillis)
		}
	}
	slices.Sort(left)
	if need := quorum.Majority(len(st.Nodes)); len(left) >= need {
		g.WaitMillis = left[need-1]
	}
	st.Guard = g
}

// guardLine says in one line whether a new lock's grants count now.
func guardLine(st *lockStatus) string {
	g := st.Guard
	guard := time.Duration(g.GuardMillis) * time.Millisecond
	n := len(st.Nodes)
	need := quorum.Majority(n)
	switch {
	case guard == 0:
		return "restart guard off: every master's grants count"
	case g.Counted >= need:
		return fmt.Sprintf("restart guard %v: %d of %d masters count (up that long, or vouched for)", guard, g.Counted, n)
	case g.Counted+(n-g.Counted-g.Unknown) >= need:
		return fmt.Sprintf("restart guard %v: only %d of %d masters count yet: locks are not granted for %v — "+
			"if the masters are a new deployment, vouch for them with 'quorumlock trust'", guard, g.Counted, n,
			(time.Duration(g.WaitMillis) * time.Millisecond).Round(time.Second))
	}
	return fmt.Sprintf("restart guard %v: only %d of %d masters count, and %d did not say when they started", guard, g.Counted, n, g.Unknown)
}

// upText is a master's uptime in the table.
func upText(n *nodeStatus) string {
	if !n.Reachable || n.StartError != "" {
		return "-"
	}
	return (time.Duration(n.UptimeSeconds) * time.Second).String()
}

// guardText is a master's standing against the guard in the table.
func guardText(n *nodeStatus) string {
	switch {
	case !n.Reachable || n.StartError != "":
		return "-"
	case n.Vouched:
		return "vouched"
	case n.GuardLeftMillis > 0:
		return fmt.Sprintf("%v left", (time.Duration(n.GuardLeftMillis) * time.Millisecond).Round(time.Second))
	}
	return "counts"
}

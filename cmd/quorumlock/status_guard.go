package main

import (
	"fmt"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
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

// setStart records node i's start, and the longest TTL record of the
// locks it holds.
func (st *lockStatus) setStart(i int, in redlock.NodeInspection) {
	n := &st.Nodes[i]
	n.start, n.record = in.Start, in.Record
	if in.StartErr != nil {
		n.StartError = in.StartErr.Error()
		return
	}
	n.RunID, n.UptimeSeconds, n.Vouched = in.RunID, int64(in.Start.Uptime/time.Second), in.Start.Vouched
}

// tallyGuard sets each master's time left against the restart guard that
// a run with g meets, and how long until a majority counts: the library's
// computation (guardSetting.view), as run's exit status 76 says it.
func (st *lockStatus) tallyGuard(g guardSetting) {
	starts := make([]redlock.MasterStart, len(st.Nodes))
	var longest time.Duration
	for i, n := range st.Nodes {
		if n.Reachable {
			starts[i], longest = n.start, max(longest, n.record)
		}
	}
	v, err := g.view(starts, longest)
	if err != nil { // the flags were checked: a bug
		st.Guard = &guardStatus{}
		return
	}
	st.Guard = &guardStatus{GuardMillis: v.Guard.Milliseconds(), Counted: v.Counted, Unknown: v.Unknown,
		WaitMillis: max(0, v.Wait.Milliseconds())}
	for i := range st.Nodes {
		st.Nodes[i].GuardLeftMillis = v.Left[i].Milliseconds()
	}
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

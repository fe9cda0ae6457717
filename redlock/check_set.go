package redlock

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// The checks of the set of members as a whole: how many, whether two are
// one server, and whether a majority counts now.

// setFindings returns the findings about the members together.
func setFindings(cfg *config, members []memberCheck) []Finding {
	out := []Finding{countFinding(len(members))}
	out = append(out, sameServers(members)...)
	if f, ok := youngMajority(cfg, members); ok {
		out = append(out, f)
	}
	return out
}

// countFinding judges the number of members n: fewer than three tolerate
// no failure, and an even number tolerates no more than one fewer.
func countFinding(n int) Finding {
	need := quorum.Majority(n)
	f := Finding{Node: -1, Check: "members", Got: fmt.Sprintf("%d masters: a majority is %d, %d may fail", n, need, n-need),
		Want: "an odd number, at least 3"}
	switch {
	case n < 3:
		f.Severity, f.Why = SeverityWarn, "no fault tolerance: one master down and no lock can be had"
	case n%2 == 0:
		f.Severity, f.Why = SeverityWarn, fmt.Sprintf("%d masters tolerate no more failures than %d: the last one adds load, not tolerance", n, n-1)
	default:
		f.Severity, f.Why = SeverityOK, "any minority may fail"
	}
	return f
}

// sameServers finds members that reach one server process (same run_id):
// one address given twice under two names, or one cluster given through
// two of its nodes. Their votes are one vote counted twice.
func sameServers(members []memberCheck) []Finding {
	var out []Finding
	seen := map[string]int{}
	for i, m := range members {
		for _, id := range m.runIDs {
			j, ok := seen[id]
			if !ok {
				seen[id] = i
				continue
			}
			if j == i {
				continue
			}
			out = append(out, Finding{Node: i, Addr: firstAddr(m), Check: "same-server", Severity: SeverityFail,
				Got: fmt.Sprintf("the same server as node %d (run_id %.8s)", j, id), Want: "an independent master",
				Why: "one server counted as two votes: a majority of votes may be a minority of masters, and two holders can each win one"})
			break
		}
	}
	return out
}

// firstAddr is the address of member m's first finding.
func firstAddr(m memberCheck) string {
	for _, f := range m.findings {
		if f.Addr != "" {
			addr, _, _ := strings.Cut(f.Addr, " primary ")
			return addr
		}
	}
	return ""
}

// youngMajority reports a finding when fewer than a majority of members
// count their grants now: no lock until enough of them are up for the guard.
func youngMajority(cfg *config, members []memberCheck) (Finding, bool) {
	var waits []time.Duration
	for _, m := range members {
		if m.reachable {
			waits = append(waits, m.youngFor)
		}
	}
	need := quorum.Majority(len(members))
	if len(waits) < need {
		return Finding{}, false
	}
	slices.Sort(waits)
	wait := waits[need-1]
	if wait == 0 {
		return Finding{}, false
	}
	return Finding{Node: -1, Check: "start", Severity: SeverityWarn,
		Got:  fmt.Sprintf("fewer than %d masters count their grants now", need),
		Want: "a majority up for the restart guard, or vouched for",
		Why:  fmt.Sprintf("no lock can be had for up to %v (restart guard %v), unless the new masters are vouched for (quorumlock trust)", wait.Round(time.Second), guardOf(cfg))}, true
}

// nodeAddr names member n as given: its address, or its seed addresses.
func nodeAddr(n redis.UniversalClient) string {
	switch r := n.(type) {
	case *redis.Client:
		return r.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(r.Options().Addrs, ",")
	case *redis.Ring:
		var addrs []string
		for _, a := range r.Options().Addrs {
			addrs = append(addrs, a)
		}
		slices.Sort(addrs)
		return strings.Join(addrs, ",")
	}
	return fmt.Sprintf("%T", n)
}

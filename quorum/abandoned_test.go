package quorum_test

import (
	"context"
	"testing"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// Abandoned names exactly the calls whose votes reach Late: every blocked
// node, and any answer Run had not counted when it decided (early decision or
// timeout).
func TestAbandonedIsExactlyWhatReachesLate(t *testing.T) {
	cases := []struct {
		script  string
		timeout bool
	}{
		{"GGGgg", false},
		{"GgGrG", false},
		{"GgFfR", true},
		{"GGGGG", false},
		{"ggggg", true},
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			r := newRig(t, tc.script)
			q := r.round(0)
			waitFor := r.counted(&q)
			out := r.start(context.Background(), q)
			if tc.timeout {
				waitFor(countUpper(tc.script))
				r.sleeping()
				r.clock.Advance(timeout)
			}
			tally := r.await(out)
			r.settle()
			late := map[int]bool{}
			for _, l := range r.late {
				late[l.node] = true
			}
			for n := range tc.script {
				blocked := tc.script[n] >= 'a'
				if blocked && !tally.Abandoned(n) {
					t.Errorf("node %d blocked but not Abandoned", n)
				}
				if tally.Abandoned(n) != late[n] {
					t.Errorf("node %d: Abandoned = %v, reached Late = %v", n, tally.Abandoned(n), late[n])
				}
			}
		})
	}
	var zero quorum.Tally[int]
	if zero.Abandoned(0) {
		t.Error("a zero Tally reports an abandoned call")
	}
}

func countUpper(script string) int {
	n := 0
	for _, c := range script {
		if c < 'a' {
			n++
		}
	}
	return n
}

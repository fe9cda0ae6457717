package quorum_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// TestRunAllocations pins what one round of five nodes allocates on the
// real clock: the tally's votes, the state the calls share with their
// channel (the votes of five nodes with it), one function for every call,
// and the shared deadline — not a closure per node, a timer of its own,
// nor a slice for the abandoned calls (issue 26: 20 before, then 12).
func TestRunAllocations(t *testing.T) {
	r := quorum.Round[int]{Nodes: 5, Timeout: time.Second}
	ctx := context.Background()
	call := func(context.Context, int) quorum.Vote[int] { return quorum.Vote[int]{Outcome: quorum.Granted} }
	r.Run(ctx, call)
	got := testing.AllocsPerRun(200, func() {
		if tl := r.Run(ctx, call); !tl.Won() {
			t.Fatalf("round lost: %v", &tl)
		}
	})
	t.Logf("%.1f allocations per round", got)
	if got > 12 {
		t.Errorf("a round of five nodes made %.1f allocations, want at most 12 (11 when written)", got)
	}
}

package redlock_test

import (
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// Fencing tokens strictly increase across 300 successive holders of one key
// from three clients, while masters restart empty one at a time (each a
// minority, with holders in between) and, for the last third, two masters
// are down for good — so that every grant needs the three left, restarted
// ones among them.
func TestTokensIncreaseAcrossEmptyRestarts(t *testing.T) {
	_, _, l := lab(t, 5)
	l.RequireControl(t)
	var clients []*redlock.Client
	for range 3 {
		// Restart detection off: a restarted master votes at once, with its
		// counters gone — the hardest case for the tokens' order.
		clients = append(clients, newClient(t, l.Clients(t), redlock.WithTTL(2*time.Second), redlock.WithRestartGuard(0)))
	}
	ctx := ctxFor(t, 2*time.Minute)
	var last int64
	restarts := 0
	for i := 0; i < 300; i++ {
		switch {
		case i == 200:
			for _, n := range l.Nodes[3:] {
				if err := n.Kill(); err != nil {
					t.Fatalf("Kill: %v", err)
				}
			}
		case i%10 == 5:
			victim := l.Nodes[restarts%3] // nodes 0..2 stay up to the end
			if i < 200 {
				victim = l.Nodes[restarts%5]
			}
			if err := victim.Restart(true); err != nil {
				t.Fatalf("Restart(empty): %v", err)
			}
			restarts++
		}
		lk, err := clients[i%3].Lock(ctx, "fenced")
		if err != nil {
			t.Fatalf("holder %d: Lock: %v", i, err)
		}
		if lk.Token() <= last {
			t.Fatalf("holder %d: token %d after %d: fencing tokens must strictly increase", i, lk.Token(), last)
		}
		last = lk.Token()
		if err := lk.Unlock(ctx); err != nil {
			t.Fatalf("holder %d: Unlock: %v", i, err)
		}
	}
	t.Logf("300 holders, %d empty restarts, last token %d", restarts, last)
}

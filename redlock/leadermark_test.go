package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// A leader's mark does not decay with restarts: the masters that restarted
// empty get the lock again from renewals, and the mark with it, so that
// Leader still finds a majority once the only master left from the
// campaign is gone.
func TestLeaderMarkRepairedAfterRestarts(t *testing.T) {
	ttl := time.Second
	c, nodes, lab := lab(t, 3, redlock.WithTTL(ttl))
	lab.RequireControl(t)
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a", redlock.WithTTL(ttl))
	defer l.Unlock(ctx)
	lab.Restart(t, true, 1, 2)
	lock := redlock.Keys(redlock.DefaultPrefix, "job").Lock
	eventually(t, 10*ttl, "the mark written again on the restarted masters", func() bool {
		for _, n := range nodes[1:] {
			if n.HGet(ctx, lock, "term").Val() == "" {
				return false
			}
		}
		return true
	})
	nodes[0].Del(ctx, lock)
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l.Token()})
}

// Every Campaign is an owner of its own: two campaigns of one WithOwner
// owner (the Client's default here) never share a leadership, as two
// nested holds of that owner would.
func TestCampaignIgnoresOwner(t *testing.T) {
	c, _, _ := lab(t, 3, redlock.WithOwner("svc"))
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a")
	defer l.Unlock(ctx)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if l2, err := c.Campaign(short, "job", "b", redlock.WithOwner("svc")); !errors.Is(err, redlock.ErrNotObtained) {
		if err == nil {
			l2.Unlock(ctx)
		}
		t.Fatalf("second Campaign of one owner = %v, want ErrNotObtained while the first leads", err)
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l.Token()})
}

package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// seen is one leader Observe sent, and when it arrived.
type seen struct {
	redlock.Leader
	at time.Time
}

// observe starts Observe of name on c and collects what it sends; the
// returned channel is closed when Observe's is.
func observe(t *testing.T, ctx context.Context, c *redlock.Client, name string) <-chan seen {
	t.Helper()
	ch, err := c.Observe(ctx, name)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	out := make(chan seen, 100)
	go func() {
		defer close(out)
		for ld := range ch {
			out <- seen{ld, time.Now()}
		}
	}()
	return out
}

// next returns the next leader got sends, failing t after d.
func next(t *testing.T, got <-chan seen, d time.Duration) seen {
	t.Helper()
	select {
	case s, ok := <-got:
		if !ok {
			t.Fatal("Observe's channel closed")
		}
		return s
	case <-time.After(d):
		t.Fatalf("no leader observed within %v", d)
	}
	return seen{}
}

// Observe sends the current leader, then each new one within a second of
// its Campaign returning — announced, not found by the recheck, which comes
// only every ObserveRecheck — in term order, and closes its channel when
// ctx ends.
func TestObserveFollowsLeaders(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	ctx := ctxFor(t, time.Minute)
	first := campaign(t, ctx, c, "job", "v0")
	octx, stop := context.WithCancel(ctx)
	got := observe(t, octx, newClient(t, nodes), "job")
	if s := next(t, got, 5*time.Second); s.Leader != (redlock.Leader{Value: "v0", Term: first.Token()}) {
		t.Fatalf("first observed %+v, want v0 at term %d", s.Leader, first.Token())
	}
	// Changes come after the subscriptions are surely active.
	eventually(t, 10*time.Second, "subscribed", func() bool { return leaderListening(t, nodes, "job") == len(nodes) })
	prev, last := first, first.Token()
	for i := 1; i <= 5; i++ {
		if err := prev.Unlock(ctx); err != nil {
			t.Fatalf("resign %d: %v", i, err)
		}
		value := string(rune('0' + i))
		l := campaign(t, ctx, c, "job", "v"+value)
		led := time.Now()
		s := next(t, got, 10*time.Second)
		if s.Term != l.Token() || s.Value != "v"+value || s.Term <= last {
			t.Fatalf("change %d: observed %+v, want v%s at term %d (after %d)", i, s.Leader, value, l.Token(), last)
		}
		if lag := s.at.Sub(led); lag > time.Second {
			t.Errorf("change %d observed %v after it, want within a second", i, lag)
		}
		prev, last = l, s.Term
	}
	prev.Unlock(ctx)
	stop()
	select {
	case s, ok := <-got:
		if ok {
			t.Fatalf("observed %+v after a resign with nobody leading", s.Leader)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Observe's channel not closed after ctx ended")
	}
}

// leaderListening returns on how many nodes someone listens for name's
// leaders.
func leaderListening(t *testing.T, nodes []redis.UniversalClient, name string) int {
	t.Helper()
	ch := redlock.Keys(redlock.DefaultPrefix, name).Lock + ":leader"
	n := 0
	for _, node := range nodes {
		if node.PubSubNumSub(context.Background(), ch).Val()[ch] > 0 {
			n++
		}
	}
	return n
}

// A change that no announcement tells (the leader's term and value
// rewritten by hand on every master) is found by the recheck.
func TestObserveRecoversMissedAnnouncement(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, time.Minute)
	l := campaign(t, ctx, c, "job", "a")
	defer l.Unlock(ctx)
	got := observe(t, ctx, newClient(t, nodes), "job")
	next(t, got, 5*time.Second)
	// Past Observe's early read, a subscribe timeout after it started
	// (250 ms at most): only the recheck may find the change now.
	eventually(t, 10*time.Second, "subscribed", func() bool { return leaderListening(t, nodes, "job") == len(nodes) })
	time.Sleep(time.Second)
	setLeaderOn(t, ctx, nodes, "job", l.Token()+1, "b")
	s := next(t, got, redlock.ObserveRecheck+5*time.Second)
	if s.Leader != (redlock.Leader{Value: "b", Term: l.Token() + 1}) {
		t.Fatalf("observed %+v, want b at term %d", s.Leader, l.Token()+1)
	}
}

// Observe never sends an older term than it sent: masters rewritten to an
// older term are not reported.
func TestObserveNeverGoesBack(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, time.Minute)
	l := campaign(t, ctx, c, "job", "a")
	defer l.Unlock(ctx)
	got := observe(t, ctx, newClient(t, nodes), "job")
	next(t, got, 5*time.Second)
	setLeaderOn(t, ctx, nodes, "job", l.Token()-1, "old")
	l.Extend(ctx) // keeps the lease; Observe rereads within its lease
	select {
	case s := <-got:
		t.Fatalf("observed %+v after term %d", s.Leader, l.Token())
	case <-time.After(redlock.ObserveRecheck + 2*time.Second):
	}
}

// Close ends every Observe: its channel is closed.
func TestObserveEndsWithClose(t *testing.T) {
	_, nodes, _ := lab(t, 3)
	c := newClient(t, nodes)
	got := observe(t, ctxFor(t, time.Minute), c, "job")
	c.Close()
	select {
	case _, ok := <-got:
		if ok {
			t.Fatal("observed a leader of a free name")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Observe's channel not closed by Close")
	}
}

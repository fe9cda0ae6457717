package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// campaign leads name on c with value, failing the test otherwise.
func campaign(t *testing.T, ctx context.Context, c *redlock.Client, name, value string, opts ...redlock.Option) *redlock.Lock {
	t.Helper()
	l, err := c.Campaign(ctx, name, value, opts...)
	if err != nil {
		t.Fatalf("Campaign(%q, %q): %v", name, value, err)
	}
	return l
}

// requireLeader fails t unless c's Leader of name is want.
func requireLeader(t *testing.T, ctx context.Context, c *redlock.Client, name string, want redlock.Leader) {
	t.Helper()
	got, err := c.Leader(ctx, name)
	if err != nil || got != want {
		t.Fatalf("Leader(%q) = %+v, %v; want %+v", name, got, err, want)
	}
}

// requireNoLeader fails t unless c's Leader of name is ErrNoLeader.
func requireNoLeader(t *testing.T, ctx context.Context, c *redlock.Client, name string) {
	t.Helper()
	if got, err := c.Leader(ctx, name); !errors.Is(err, redlock.ErrNoLeader) {
		t.Fatalf("Leader(%q) = %+v, %v; want ErrNoLeader", name, got, err)
	}
}

// Leader reports the campaigner's value and term (its Token) from the
// majority, and ErrNoLeader as soon as it resigned; a Campaign after it
// leads with a larger term.
func TestLeaderFollowsCampaignAndResign(t *testing.T) {
	c, _, _ := lab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	requireNoLeader(t, ctx, c, "job")
	l := campaign(t, ctx, c, "job", "host-a")
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "host-a", Term: l.Token()})
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	requireNoLeader(t, ctx, c, "job")
	l2 := campaign(t, ctx, c, "job", "host-b")
	defer l2.Unlock(ctx)
	if l2.Token() <= l.Token() {
		t.Fatalf("second term %d not larger than first %d", l2.Token(), l.Token())
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "host-b", Term: l2.Token()})
}

// A leadership recorded on a minority only is nobody's: with the leader's
// lock deleted on three of five masters, Leader answers ErrNoLeader.
func TestLeaderNeedsMajority(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a", redlock.WithAutoRenew(false))
	defer l.Unlock(ctx)
	lock := redlock.Keys(redlock.DefaultPrefix, "job").Lock
	// Campaign returns once a majority answered: let the others' calls
	// land first, or one landing after the deletes below sets them again.
	term := strconv.FormatInt(l.Token(), 10)
	eventually(t, 5*time.Second, "every master marked the leader", func() bool {
		return testkit.Count(nodes, func(n redis.UniversalClient) bool { return n.HGet(ctx, lock, "term").Val() == term }) == len(nodes)
	})
	for _, n := range nodes[:2] {
		n.Del(ctx, lock)
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l.Token()}) // three left
	nodes[2].Del(ctx, lock)
	requireNoLeader(t, ctx, c, "job")
}

// A Client never reports a term older than one it reported: masters that
// agree on an older term (rewritten here by hand) give ErrNoLeader, while
// another Client, which never saw the newer term, reports them.
func TestLeaderNeverGoesBackInTerm(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a")
	defer l.Unlock(ctx)
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l.Token()})
	setLeaderOn(t, ctx, nodes, "job", l.Token()-1, "a")
	requireNoLeader(t, ctx, c, "job")
	other := newClient(t, nodes)
	requireLeader(t, ctx, other, "job", redlock.Leader{Value: "a", Term: l.Token() - 1})
}

// setLeaderOn rewrites by hand, on every node, the term and value of name's
// leader: a change no announcement tells.
func setLeaderOn(t *testing.T, ctx context.Context, nodes []redis.UniversalClient, name string, term int64, value string) {
	t.Helper()
	lock := redlock.Keys(redlock.DefaultPrefix, name).Lock
	for _, n := range nodes {
		if err := n.HSet(ctx, lock, "term", term, "v", value).Err(); err != nil {
			t.Fatalf("HSET: %v", err)
		}
	}
}

// A leader whose process died (its Client closed without resigning) leads
// until its lease ends, then a waiting campaigner takes over with a larger
// term; Leader never reports the dead one after its lease.
func TestDeadLeaderReplacedAfterLease(t *testing.T) {
	const ttl = time.Second
	_, nodes, _ := lab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	dead := newClient(t, nodes, redlock.WithTTL(ttl))
	l := campaign(t, ctx, dead, "job", "dead", redlock.WithTTL(ttl))
	dead.Close()
	diedAt := time.Now()
	c := newClient(t, nodes)
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "dead", Term: l.Token()})
	l2 := campaign(t, ctx, c, "job", "next")
	defer l2.Unlock(ctx)
	if took := time.Since(diedAt); took < ttl/2 {
		t.Errorf("took over %v after the death, before the lease (%v) ended", took, ttl)
	}
	if l2.Token() <= l.Token() {
		t.Errorf("new term %d not larger than the dead leader's %d", l2.Token(), l.Token())
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "next", Term: l2.Token()})
}

// A leader whose lease ran out is not reported, even before anyone else
// leads: Leader answers ErrNoLeader once the lease is gone.
func TestLeaderGoneWithItsLease(t *testing.T) {
	c, _, _ := lab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a", redlock.WithTTL(time.Second), redlock.WithAutoRenew(false))
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l.Token()})
	<-l.Done()
	eventually(t, 5*time.Second, "ErrNoLeader after the lease", func() bool {
		_, err := c.Leader(ctx, "job")
		return errors.Is(err, redlock.ErrNoLeader)
	})
}

// A resigning leader hands over at once to the first campaigner in line
// (FIFO), whose backoff alone would take seconds; a late resign of a lost
// leadership ends no later one.
func TestResignHandsOverInOrder(t *testing.T) {
	c, nodes, _ := lab(t, 5)
	ctx := ctxFor(t, time.Minute)
	slow := redlock.WithRetryDelay(3*time.Second, 6*time.Second)
	l := campaign(t, ctx, c, "job", "first")
	type result struct {
		l  *redlock.Lock
		at time.Time
	}
	got := map[string]chan result{"second": make(chan result, 1), "third": make(chan result, 1)}
	for i, who := range []string{"second", "third"} {
		campaigner := newClient(t, nodes, slow)
		go func() {
			w, err := campaigner.Campaign(ctx, "job", who)
			if err != nil {
				t.Errorf("Campaign %s: %v", who, err)
			}
			got[who] <- result{w, time.Now()}
		}()
		eventually(t, 10*time.Second, who+" in line", func() bool { return queueLen(t, nodes, "job") >= i+1 })
	}
	eventually(t, 10*time.Second, "campaigners listening", func() bool { return listening(t, nodes, "job") == len(nodes) })
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("resign: %v", err)
	}
	resigned := time.Now()
	second := <-got["second"]
	if second.l == nil {
		t.FailNow()
	}
	if took := second.at.Sub(resigned); took > time.Second {
		t.Errorf("handover took %v, want at once (a wake-up, not a 3 s backoff)", took)
	}
	select {
	case r := <-got["third"]:
		t.Fatalf("third led (term %d) while second leads", r.l.Token())
	default:
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "second", Term: second.l.Token()})
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("late resign = %v, want ErrNotHeld", err)
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "second", Term: second.l.Token()})
	second.l.Unlock(ctx)
	third := <-got["third"]
	if third.l == nil || third.l.Token() <= second.l.Token() {
		t.Fatalf("third's term not larger than second's %d", second.l.Token())
	}
	third.l.Unlock(ctx)
}

// queueLen is the longest waiters' queue of name among nodes.
func queueLen(t *testing.T, nodes []redis.UniversalClient, name string) int {
	t.Helper()
	queue := redlock.Keys(redlock.DefaultPrefix, name).Queue
	most := 0
	for _, n := range nodes {
		most = max(most, int(n.ZCard(context.Background(), queue).Val()))
	}
	return most
}

// Bad input is refused with ErrInvalid, and nothing is written.
func TestElectionBadInput(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	long := strings.Repeat("n", redlock.MaxKeyLen+1)
	big := strings.Repeat("v", redlock.MaxLeaderValue+1)
	var nilCtx context.Context
	campaigns := map[string]func() error{
		"empty name":  func() error { _, err := c.Campaign(ctx, "", "v"); return err },
		"long name":   func() error { _, err := c.Campaign(ctx, long, "v"); return err },
		"big value":   func() error { _, err := c.Campaign(ctx, "job", big); return err },
		"nil ctx":     func() error { _, err := c.Campaign(nilCtx, "job", "v"); return err },
		"bad TTL":     func() error { _, err := c.Campaign(ctx, "job", "v", redlock.WithTTL(-1)); return err },
		"leader name": func() error { _, err := c.Leader(ctx, ""); return err },
		"leader long": func() error { _, err := c.Leader(ctx, long); return err },
		"observe":     func() error { _, err := c.Observe(ctx, ""); return err },
		"observe nil": func() error { _, err := c.Observe(nilCtx, "job"); return err },
	}
	keys := make([]int64, len(nodes)) // the trust records
	for i, n := range nodes {
		keys[i] = n.DBSize(ctx).Val()
	}
	for name, call := range campaigns {
		if err := call(); !errors.Is(err, redlock.ErrInvalid) || !strings.HasPrefix(err.Error(), "redlock: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line matching ErrInvalid", name, err)
		}
	}
	for i, n := range nodes {
		if size := n.DBSize(ctx).Val(); size != keys[i] {
			t.Errorf("node %d holds %d keys after bad input, want %d", i, size, keys[i])
		}
	}
	l := campaign(t, ctx, c, "job", strings.Repeat("v", redlock.MaxLeaderValue))
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: strings.Repeat("v", redlock.MaxLeaderValue), Term: l.Token()})
	l.Unlock(ctx)
}

// A Campaign after a lost leadership works like the first: the loss is
// told (Done, ErrLockLost), and the same Client leads again, with a larger
// term.
func TestCampaignAfterLoss(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a", redlock.WithTTL(time.Second))
	lock := redlock.Keys(redlock.DefaultPrefix, "job").Lock
	for _, n := range nodes { // another owner took the lock on every master
		n.Del(ctx, lock)
		if err := n.HSet(ctx, lock, "owner", "intruder").Err(); err != nil {
			t.Fatalf("HSET: %v", err)
		}
		n.PExpire(ctx, lock, time.Second)
	}
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("the loss was never told")
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err = %v, want ErrLockLost", l.Err())
	}
	requireNoLeader(t, ctx, c, "job")
	l2 := campaign(t, ctx, c, "job", "a")
	defer l2.Unlock(ctx)
	if l2.Token() <= l.Token() {
		t.Fatalf("term after the loss %d not larger than %d", l2.Token(), l.Token())
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l2.Token()})
}

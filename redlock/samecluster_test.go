package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A member whose user may run neither INFO nor CLUSTER SHARDS cannot be
// shown to be no other member's cluster: it never votes, with an error
// naming the command, and Lock does not wait for it (NOPERM is lasting). A
// plain master whose user may run INFO but not CLUSTER is judged by INFO
// (redis_mode:standalone), and grants.
func TestSameClusterCheckRefusedToUser(t *testing.T) {
	l := safetyLab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	aclUsers(t, ctx, l, "nocluster", "-cluster")
	aclUsers(t, ctx, l, "blind", "-cluster", "-info")
	nodes := l.Clients(t, func(o *redis.Options) {
		o.Username, o.Password = "blind", "pw"
		if o.Addr == l.Nodes[2].Addr() {
			o.Username = "nocluster"
		}
	})
	c := newClient(t, nodes, redlock.WithRestartGuard(0)) // INFO refused: detection off
	_, err := c.Lock(ctx, "k")
	var q *redlock.QuorumError
	if !errors.As(err, &q) {
		t.Fatalf("Lock with 2 of 3 members' users refused INFO and CLUSTER: %v, want a *QuorumError", err)
	}
	t.Logf("Lock: %v", err)
	if q.Votes[2].Outcome == redlock.Failed {
		t.Errorf("member 2 (a user refused CLUSTER, allowed INFO): failed: %v", q.Votes[2].Err)
	}
	for _, v := range q.Votes[:2] {
		if v.Outcome != redlock.Failed || !strings.Contains(v.Err.Error(), "CLUSTER SHARDS") || !strings.Contains(v.Err.Error(), "NOPERM") {
			t.Errorf("member %d: %v %v, want failed naming CLUSTER SHARDS and NOPERM", v.Node, v.Outcome, v.Err)
		}
	}
	if ctx.Err() != nil {
		t.Errorf("Lock waited for its context: %v", err)
	}

	// The failed Lock is undone on every node, detached from it: wait for
	// the undo (not for the lease, 10 s, which a leaked grant would take).
	lock := redlock.Keys(redlock.DefaultPrefix, "k").Lock
	testkit.Eventually(t, 5*time.Second, "the failed Lock undone on every node", func() bool {
		return testkit.Count(l.Clients(t), func(n redis.UniversalClient) bool { return n.Exists(ctx, lock).Val() == 1 }) == 0
	})
	allowed := newClient(t, l.Clients(t, func(o *redis.Options) { o.Username, o.Password = "nocluster", "pw" }))
	lk, err := allowed.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock on plain masters whose users may not run CLUSTER: %v", err)
	}
	lk.Unlock(ctx)
}

// aclUsers creates the ACL user name (password "pw") on every node of l,
// allowed everything but the given command rules.
func aclUsers(t *testing.T, ctx context.Context, l *redislab.Lab, name string, minus ...string) {
	t.Helper()
	for i, n := range l.Nodes {
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		args := []any{"ACL", "SETUSER", name, "on", ">pw", "+@all", "~*", "&*"}
		for _, m := range minus {
			args = append(args, m)
		}
		err := c.Do(ctx, args...).Err()
		c.Close()
		if err != nil {
			t.Fatalf("node %d: ACL SETUSER: %v", i, err)
		}
	}
}

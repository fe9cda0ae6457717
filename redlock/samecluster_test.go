package redlock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A member whose user may not run CLUSTER SHARDS cannot be shown to be no
// other member's cluster: it never votes, with an error naming the
// command, and Lock does not wait for it (NOPERM is lasting). A plain
// master whose user may is not refused.
func TestSameClusterCheckRefusedToUser(t *testing.T) {
	l := safetyLab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	for i := range 2 {
		c := redis.NewClient(&redis.Options{Addr: l.Nodes[i].Addr()})
		err := c.Do(ctx, "ACL", "SETUSER", "nocluster", "on", ">pw", "+@all", "-cluster", "~*", "&*").Err()
		c.Close()
		if err != nil {
			t.Fatalf("node %d: ACL SETUSER: %v", i, err)
		}
	}
	nodes := l.Clients(t, func(o *redis.Options) {
		if o.Addr != l.Nodes[2].Addr() {
			o.Username, o.Password = "nocluster", "pw"
		}
	})
	c := newClient(t, nodes)
	_, err := c.Lock(ctx, "k")
	var q *redlock.QuorumError
	if !errors.As(err, &q) {
		t.Fatalf("Lock with 2 of 3 members' users refused CLUSTER SHARDS: %v, want a *QuorumError", err)
	}
	t.Logf("Lock: %v", err)
	if q.Votes[2].Outcome == redlock.Failed {
		t.Errorf("member 2 (a user allowed CLUSTER): failed: %v", q.Votes[2].Err)
	}
	for _, v := range q.Votes[:2] {
		if v.Outcome != redlock.Failed || !strings.Contains(v.Err.Error(), "CLUSTER SHARDS") || !strings.Contains(v.Err.Error(), "NOPERM") {
			t.Errorf("member %d: %v %v, want failed naming CLUSTER SHARDS and NOPERM", v.Node, v.Outcome, v.Err)
		}
	}
	if errors.Is(err, ctx.Err()) || ctx.Err() != nil {
		t.Errorf("Lock waited for its context: %v", err)
	}
}

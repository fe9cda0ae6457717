package redlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// A re-sent attempt — same owner, same hold, as when the first reply was
// lost — is granted again rather than blocked by itself, returns the same
// token, and adds no second hold.
func TestResentAttemptIsIdempotent(t *testing.T) {
	lab := redislab.Start(t, 3)
	lab.Trust(t, TrustStart)
	nodes := lab.Clients(t)
	// A roomy node timeout: the test is about idempotence, and a cold first
	// call (NOSCRIPT, then EVAL) under -race can take longer than the default.
	c, err := New(nodes, WithAutoRenew(false), WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := c.cfg
	kss := newKeysets(cfg.prefix, []string{"k"})
	ks := kss[0]
	a := &acquisition{c: c, cfg: cfg, keys: []string{"k"}, key: "k", kss: kss, kind: writer, id: identity{owner: "owner-1", hold: "hold-1"}}
	r := round[[]int64](c, &cfg)
	r.Decided = func(*quorum.Tally[[]int64]) bool { return false } // hear every node
	send := func() []int64 {
		t.Helper()
		tally := r.Run(ctx, func(ctx context.Context, n int) quorum.Vote[[]int64] {
			reply, err := c.exec(ctx, n, &a.calls("")[n]).Slice()
			return a.vote(n, reply, err)
		})
		if !tally.Won() || tally.Count(quorum.Granted) != 3 {
			t.Fatalf("attempt: %v, want granted by all 3", tally.String())
		}
		tokens := make([]int64, 3)
		for i, v := range tally.Votes {
			tokens[i] = v.Value[0]
		}
		return tokens
	}
	first, again := send(), send()
	for i := range first {
		if first[i] != again[i] {
			t.Errorf("node %d: token of the re-sent attempt = %d, want %d (no new grant)", i, again[i], first[i])
		}
		fields, err := nodes[i].HKeys(ctx, ks.Lock).Result()
		holds := 0
		for _, f := range fields {
			if strings.HasPrefix(f, "h:") {
				holds++
			}
		}
		if err != nil || holds != 1 {
			t.Errorf("node %d: lock hash fields %q (err %v), want one hold", i, fields, err)
		}
	}
	// A different owner is refused while it is held.
	other := *a
	other.id = identity{owner: "owner-2", hold: "hold-2"}
	for i := range nodes {
		reply, err := c.exec(ctx, i, &other.calls("")[i]).Slice()
		v := other.vote(i, reply, err)
		if v.Outcome != quorum.Refused || v.Value[0] <= 0 {
			t.Errorf("node %d: another owner's attempt = %v (pttl %d), want refused with the remaining TTL", i, v.Outcome, v.Value[0])
		}
	}
}

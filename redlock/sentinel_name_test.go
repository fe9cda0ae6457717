package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Issue 25: a Sentinel member (redis.NewFailoverClient) has no address of
// its own, so its votes name the master its client reaches: "sentinel
// master" and that master's address — before a failover and after it,
// when that is the promoted replica.
func TestSentinelVoteNamesTheMaster(t *testing.T) {
	sets, clients := sentinelMembers(t, 1)
	ctx := ctxFor(t, 2*time.Minute)
	holder := readySentinel(t, ctx, clients)
	refusedVoteNames(t, ctx, holder, clients, sets[0], "before")

	if err := sets[0].Failover(ctx); err != nil {
		t.Fatalf("Failover: %v", err)
	}
	after := newClient(t, clients, redlock.WithTTL(sentinelTTL), redlock.WithRestartGuard(sentinelTTL), redlock.WithAutoRenew(false))
	refusedVoteNames(t, ctx, after, clients, sets[0], "after")
}

// refusedVoteNames has holder lock key (retried while the promoted master
// sits out the guard), then a fresh Client try it: its refused vote must
// name the master s's sentinel names.
func refusedVoteNames(t *testing.T, ctx context.Context, holder *redlock.Client, clients []redis.UniversalClient, s *redislab.SentinelSet, key string) {
	t.Helper()
	l := eventuallyLocked(t, 3*sentinelTTL, "the member grants "+key, func() (*redlock.Lock, error) {
		return holder.TryLock(ctx, key)
	})
	defer func() { _ = l.Unlock(ctx) }()
	master, err := s.MasterAddr(ctx)
	if err != nil {
		t.Fatalf("MasterAddr: %v", err)
	}
	rival := newClient(t, clients, redlock.WithTTL(sentinelTTL), redlock.WithRestartGuard(sentinelTTL), redlock.WithAutoRenew(false))
	_, err = rival.TryLock(ctx, key)
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || len(qe.Votes) != 1 {
		t.Fatalf("%s: a rival's TryLock of a held key: %v, want a QuorumError with one vote", key, err)
	}
	if want := "sentinel master " + master; qe.Votes[0].Addr != want {
		t.Errorf("%s: the vote names %q, want %q (error: %v)", key, qe.Votes[0].Addr, want, err)
	}
}

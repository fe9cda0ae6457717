package testkit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// probeTimeout bounds each probe's command.
const probeTimeout = 5 * time.Second

// Count returns on how many of nodes cond holds.
func Count(nodes []redis.UniversalClient, cond func(redis.UniversalClient) bool) int {
	n := 0
	for _, node := range nodes {
		if cond(node) {
			n++
		}
	}
	return n
}

// Owners returns, per node, the owner of the lock hash named lock (a
// redlock KeyNames.Lock): its "owner" field, "" when there is none.
func Owners(t testing.TB, nodes []redis.UniversalClient, lock string) []string {
	t.Helper()
	out := make([]string, len(nodes))
	for i, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		v, err := n.HGet(ctx, lock, "owner").Result()
		cancel()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("node %d: HGET %s owner: %v", i, lock, err)
		}
		out[i] = v
	}
	return out
}

// QueueLen returns how many waiters the queue named queue (a redlock
// KeyNames.Queue) holds on node n: its ZCARD.
func QueueLen(t testing.TB, n redis.UniversalClient, queue string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	size, err := n.ZCard(ctx, queue).Result()
	if err != nil {
		t.Fatalf("ZCARD %s: %v", queue, err)
	}
	return size
}

// Queued reports whether owner waits in the queue named queue on node n.
func Queued(t testing.TB, n redis.UniversalClient, queue, owner string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	err := n.ZScore(ctx, queue, owner).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("ZSCORE %s %s: %v", queue, owner, err)
	}
	return err == nil
}

// Subscribers returns how many connections to node n are subscribed to
// channel (a redlock KeyNames.Channel): its PUBSUB NUMSUB.
func Subscribers(t testing.TB, n redis.UniversalClient, channel string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	subs, err := n.PubSubNumSub(ctx, channel).Result()
	if err != nil {
		t.Fatalf("PUBSUB NUMSUB %s: %v", channel, err)
	}
	return subs[channel]
}

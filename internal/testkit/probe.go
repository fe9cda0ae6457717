package testkit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// probeTimeout bounds each probe's command.
const probeTimeout = 5 * time.Second

// probe returns what run reads from a node within probeTimeout, failing t
// on an error other than redis.Nil (nothing there).
func probe[T any](t testing.TB, what string, run func(context.Context) (T, error)) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	v, err := run(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

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
		out[i] = probe(t, fmt.Sprintf("node %d: HGET %s owner", i, lock), func(ctx context.Context) (string, error) {
			return n.HGet(ctx, lock, "owner").Result()
		})
	}
	return out
}

// QueueLen returns how many waiters the queue named queue (a redlock
// KeyNames.Queue) holds on node n: its ZCARD.
func QueueLen(t testing.TB, n redis.UniversalClient, queue string) int64 {
	t.Helper()
	return probe(t, "ZCARD "+queue, func(ctx context.Context) (int64, error) {
		return n.ZCard(ctx, queue).Result()
	})
}

// Queued reports whether owner waits in the queue named queue on node n.
func Queued(t testing.TB, n redis.UniversalClient, queue, owner string) bool {
	t.Helper()
	return probe(t, "ZSCORE "+queue+" "+owner, func(ctx context.Context) (bool, error) {
		err := n.ZScore(ctx, queue, owner).Err()
		return err == nil, err
	})
}

// Subscribers returns how many connections to node n are subscribed to
// channel (a redlock KeyNames.Channel): its PUBSUB NUMSUB.
func Subscribers(t testing.TB, n redis.UniversalClient, channel string) int64 {
	t.Helper()
	return probe(t, "PUBSUB NUMSUB "+channel, func(ctx context.Context) (int64, error) {
		subs, err := n.PubSubNumSub(ctx, channel).Result()
		return subs[channel], err
	})
}

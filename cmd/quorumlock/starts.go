package main

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A nodeStart is what a master says about its server process: how long it
// has been up, and whether 'quorumlock trust' vouched for it.
type nodeStart struct {
	runID   string
	uptime  time.Duration
	vouched bool
	err     error
}

// readStart reads node rdb's run_id and uptime (INFO server) and the vouch
// (redlock.TrustKey) in one round trip.
func readStart(ctx context.Context, rdb *redis.Client) nodeStart {
	pipe := rdb.Pipeline()
	info := pipe.InfoMap(ctx, "server")
	trusted := pipe.Get(ctx, redlock.TrustKey)
	pipe.Exec(ctx)
	return startOf(info, trusted)
}

// startOf reads the answers of INFO server and GET redlock.TrustKey.
func startOf(info *redis.InfoCmd, trusted *redis.StringCmd) nodeStart {
	if err := info.Err(); err != nil {
		return nodeStart{err: err}
	}
	server := info.Val()["Server"]
	secs, err := strconv.Atoi(server["uptime_in_seconds"])
	if err != nil || server["run_id"] == "" {
		return nodeStart{err: errors.New("INFO server lacks run_id or uptime_in_seconds")}
	}
	s := nodeStart{runID: server["run_id"], uptime: time.Duration(secs) * time.Second}
	s.vouched = trusted.Err() == nil && trusted.Val() == s.runID
	return s
}

// guardLeft is how long the node's grants still do not count under guard:
// 0 once it has been up that long (with the second of slack the library
// allows uptime_in_seconds), or when vouched for.
func (s nodeStart) guardLeft(guard time.Duration) time.Duration {
	if s.vouched || guard == 0 {
		return 0
	}
	return max(0, guard+time.Second-s.uptime)
}

// starts reads every node's start in parallel, each under ctx.
func (ns *nodeSet) starts(ctx context.Context) []nodeStart {
	out := make([]nodeStart, len(ns.clients))
	var wg sync.WaitGroup
	for i, c := range ns.clients {
		wg.Go(func() { out[i] = readStart(ctx, c) })
	}
	wg.Wait()
	return out
}

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

// readStart reads node rdb's run_id and uptime (INFO server), the vouch
// (redlock.TrustKey) and the TTL records of locks (see queueRecords) in one
// round trip.
func readStart(ctx context.Context, rdb *redis.Client, locks []string) (nodeStart, time.Duration) {
	pipe := rdb.Pipeline()
	info := pipe.InfoMap(ctx, "server")
	trusted := pipe.Get(ctx, redlock.TrustKey)
	record := queueRecords(ctx, pipe, locks)
	pipe.Exec(ctx)
	return startFromInfo(info, trusted), record()
}

// startFromInfo reads the answers of INFO server and GET of the vouch.
func startFromInfo(info *redis.InfoCmd, trusted *redis.StringCmd) nodeStart {
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

// queueRecords adds to pipe the reads of the TTL records of locks (the
// field "ttl" of a held lock: the longest TTL it was granted with). The
// function it returns gives, once the pipeline ran, the longest record:
// redlock.MaxRestartGuard for a lock held without one, 0 if none is held —
// as the library reads them (prelude.lua: lease_ttl).
func queueRecords(ctx context.Context, pipe redis.Pipeliner, locks []string) func() time.Duration {
	ttls := make([]*redis.StringCmd, len(locks))
	held := make([]*redis.IntCmd, len(locks))
	for i, l := range locks {
		ttls[i], held[i] = pipe.HGet(ctx, l, "ttl"), pipe.Exists(ctx, l)
	}
	return func() time.Duration {
		var longest time.Duration
		for i := range locks {
			longest = max(longest, recordOf(ttls[i], held[i].Val() == 1))
		}
		return longest
	}
}

// recordOf reads one lock's TTL record (ms), held or not.
func recordOf(ttl *redis.StringCmd, held bool) time.Duration {
	if !held {
		return 0
	}
	ms, err := ttl.Int64()
	if err != nil {
		return redlock.MaxRestartGuard
	}
	return time.Duration(ms) * time.Millisecond
}

// starts reads every node's start, and the longest TTL record of locks
// over the nodes, in parallel, each under ctx.
func (ns *nodeSet) starts(ctx context.Context, locks []string) ([]nodeStart, time.Duration) {
	out := make([]nodeStart, len(ns.clients))
	records := make([]time.Duration, len(ns.clients))
	var wg sync.WaitGroup
	for i, c := range ns.clients {
		wg.Go(func() { out[i], records[i] = readStart(ctx, c, locks) })
	}
	wg.Wait()
	var longest time.Duration
	for _, r := range records {
		longest = max(longest, r)
	}
	return out, longest
}

// A guardSetting is the restart guard a run's Client uses: --ttl, and
// --restart-guard when given (else the library's default guard).
type guardSetting struct {
	ttl, guard time.Duration
	guardSet   bool
}

// view is how the restart guard stands for a run with g over masters that
// said starts, the longest TTL record on the keys being longest: the
// library's computation (redlock.ViewRestartGuard), shared by status and
// run's exit status 76.
func (g guardSetting) view(starts []nodeStart, longest time.Duration) (redlock.GuardView, error) {
	masters := make([]redlock.MasterStart, len(starts))
	for i, s := range starts {
		masters[i] = redlock.MasterStart{Known: s.err == nil && s.runID != "", Uptime: s.uptime, Vouched: s.vouched}
	}
	opts := []redlock.Option{redlock.WithTTL(g.ttl), redlock.WithFenceRetention(fenceRetention(g.ttl))}
	if g.guardSet {
		opts = append(opts, redlock.WithRestartGuard(g.guard))
	}
	return redlock.ViewRestartGuard(masters, longest, opts...)
}

package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// vouchMember vouches for member rdb, given as addr: one vouch, or on a
// cluster one per primary (replicas are never vouched for), named
// "addr cluster: primary p" — or one failed vouch if the cluster cannot
// be walked. Each call to a node is bounded by pc; walking the cluster,
// by the clients' own timeouts (nodeOptions).
func vouchMember(pc perCall, addr string, rdb redis.UniversalClient) []vouch {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		p := rdb.(*redis.Client)
		p.AddHook(pc)
		v := vouchServer(context.Background(), p)
		v.addr = addr
		return []vouch{v}
	}
	var mu sync.Mutex
	var out []vouch
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, p *redis.Client) error {
		p.AddHook(pc)
		v := vouchServer(ctx, p)
		v.addr = addr + " cluster: primary " + redactAddr(p.Options().Addr)
		mu.Lock()
		defer mu.Unlock()
		out = append(out, v)
		return nil
	})
	if err != nil || len(out) == 0 {
		return []vouch{{addr: addr, err: cmp.Or(err, fmt.Errorf("the cluster has no primary"))}}
	}
	slices.SortFunc(out, func(a, b vouch) int { return cmp.Compare(a.addr, b.addr) })
	return out
}

// perCall is a go-redis hook that bounds each call (a command, or a
// pipeline) by its duration, where the caller's context has no earlier
// deadline. trust bounds its calls, not the whole vouch: a cluster primary
// vouched for writes a record per slot it serves — up to 16384, in
// pipelines (redlock.TrustStart) — so the time the whole vouch takes grows
// with the slots and with the host's load, while no one call should.
type perCall time.Duration

func (pc perCall) DialHook(next redis.DialHook) redis.DialHook { return next }

func (pc perCall) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(pc))
		defer cancel()
		return next(ctx, cmd)
	}
}

func (pc perCall) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		ctx, cancel := context.WithTimeout(ctx, time.Duration(pc))
		defer cancel()
		return next(ctx, cmds)
	}
}

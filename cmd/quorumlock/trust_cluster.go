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

// A node given by address may be one node of a Redis Cluster (INFO server
// says redis_mode:cluster): trust and status then talk to the cluster
// through a ClusterClient seeded with that address — trust vouches for
// every primary of it, status reads the key on its slot's primary.

// clusterOf returns a ClusterClient seeded with rdb's node, with rdb's
// credentials, TLS and timeouts. The caller closes it.
func clusterOf(rdb *redis.Client) *redis.ClusterClient {
	o := rdb.Options()
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{o.Addr}, Dialer: o.Dialer, TLSConfig: o.TLSConfig,
		Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider, Protocol: o.Protocol,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, DialerRetries: o.DialerRetries,
		MaintNotificationsConfig: o.MaintNotificationsConfig, DisableIdentity: o.DisableIdentity,
	})
}

// members returns, per node of ns, the client trust vouches through: a
// ClusterClient for a node in cluster mode, else the node's own client. A
// node that does not answer INFO under timeout keeps its own client (the
// vouch then reports why). close closes the ClusterClients.
func (ns *nodeSet) members(timeout time.Duration) (members []redis.UniversalClient, close func()) {
	members = make([]redis.UniversalClient, len(ns.clients))
	var wg sync.WaitGroup
	for i, c := range ns.clients {
		members[i] = c
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if c.InfoMap(ctx, "server").Item("Server", "redis_mode") == "cluster" {
				members[i] = clusterOf(c)
			}
		})
	}
	wg.Wait()
	return members, func() {
		for _, m := range members {
			if cc, ok := m.(*redis.ClusterClient); ok {
				cc.Close()
			}
		}
	}
}

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

package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// A shardFault injects itself on the sharded lab and returns how to heal
// it; it lasts at least minLast. Faults that restart or promote servers
// say when: fresh clients are drawn right after.
type shardFault struct {
	kind     string
	minLast  time.Duration
	restarts phase
	inject   func(s *shardSoak) (heal func())
}

// shardFaults returns the faults of the sharded soak whose kind contains
// only; the stale replica promoted only with takeover (the lab then has
// replicas). Each fault hits
// one shard, drawn at random, in one or two of the three members: two is a
// majority for that shard's keys, and the member's other shards go on.
func shardFaults(takeover bool, only string) []shardFault {
	faults := []shardFault{
		{"shard killed, restarted empty after > TTL", shardSoakTTL + shardSoakTTL/4, atHeal, func(s *shardSoak) func() {
			shard, members := s.pickShard()
			_, stop := s.probe(shard)
			nodes := s.primaries(shard, members)
			s.each(nodes, (*redislab.Node).Kill)
			return func() { stop(); s.each(nodes, func(n *redislab.Node) error { return n.Restart(true) }) }
		}},
		{"shard restarted empty at once", shardSoakTTL, atInject, func(s *shardSoak) func() {
			shard, members := s.pickShard()
			_, stop := s.probe(shard)
			s.each(s.primaries(shard, members), func(n *redislab.Node) error { return n.Restart(true) })
			return stop
		}},
		{"shard frozen (SIGSTOP)", 0, noRestart, func(s *shardSoak) func() {
			shard, members := s.pickShard()
			_, stop := s.probe(shard)
			nodes := s.primaries(shard, members)
			s.each(nodes, (*redislab.Node).Pause)
			return func() { s.each(nodes, (*redislab.Node).Resume); stop() }
		}},
		{"shard latency", 0, noRestart, func(s *shardSoak) func() {
			d := time.Duration(s.rng.Int64N(int64(3 * shardSoakTimeout)))
			shard, members := s.pickShard()
			_, stop := s.probe(shard)
			s.m.onShard(func(p *faultproxy.Proxy) { p.SetLatency(d, d) }, shard, members...)
			return func() { s.m.heal(); stop() }
		}},
		{"shard blackholed", 0, noRestart, func(s *shardSoak) func() {
			shard, members := s.pickShard()
			_, stop := s.probe(shard)
			s.m.onShard(func(p *faultproxy.Proxy) { p.SetBlackhole(true) }, shard, members...)
			return func() { s.m.heal(); stop() }
		}},
		{"slot of a held key moved", 0, noRestart, func(s *shardSoak) func() {
			key, stop := s.probe(s.rng.IntN(len(s.lab.Members[0].Shards)))
			s.moveSlot(key)
			return stop
		}},
	}
	if takeover {
		faults = append(faults, shardFault{"stale replica promoted (TAKEOVER)", shardSoakTTL, atInject, func(s *shardSoak) func() {
			return s.staleTakeover()
		}})
	}
	return slices.DeleteFunc(faults, func(f shardFault) bool { return !strings.Contains(f.kind, only) })
}

// pickShard returns a random shard and one or two random members.
func (s *shardSoak) pickShard() (shard int, members []int) {
	shard = s.rng.IntN(len(s.lab.Members[0].Shards))
	return shard, randomSubset(s.rng, len(s.lab.Members), 1+s.rng.IntN(2))
}

// primaries returns the current primary of shard in each given member.
func (s *shardSoak) primaries(shard int, members []int) []*redislab.Node {
	nodes := make([]*redislab.Node, len(members))
	for i, m := range members {
		nodes[i] = s.lab.Members[m].Shards[shard].Primary()
	}
	return nodes
}

// each runs op on every node at once and fails the soak on an error.
func (s *shardSoak) each(nodes []*redislab.Node, op func(*redislab.Node) error) {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			if err := op(n); err != nil {
				errs[i] = fmt.Errorf("node %s: %w", n.Addr(), err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.t.Fatalf("sharded soak: %v", err)
	}
}

// moveSlot moves the slot of key — the probe's, held — from the shard
// that serves it to another, drawn at random, in one to three members, one
// member after another, each once it has settled (a shard restarted just
// before answers CLUSTERDOWN for about 2 s).
func (s *shardSoak) moveSlot(key string) {
	slot := redislab.Slot(key)
	members := randomSubset(s.rng, len(s.lab.Members), 1+s.rng.IntN(len(s.lab.Members)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, i := range members {
		m := s.lab.Members[i]
		if err := m.Settled(ctx); err != nil {
			s.t.Fatalf("sharded soak: member %d before moving slot %d: %v", i, slot, err)
		}
		owner, err := m.Owner(ctx, slot)
		if err != nil {
			s.t.Fatalf("sharded soak: member %d: %v", i, err)
		}
		var others []*redislab.Shard
		for _, sh := range m.Shards {
			if sh.Primary() != owner {
				others = append(others, sh)
			}
		}
		to := others[s.rng.IntN(len(others))]
		if err := m.MoveSlot(ctx, slot, to); err != nil {
			s.t.Fatalf("sharded soak: member %d: moving slot %d of %q: %v", i, slot, key, err)
		}
		s.moved++
	}
}

// staleTakeover cuts a random shard's replica off in one or two members,
// lets the primaries grant without it for half a TTL to one and a half,
// then promotes it with TAKEOVER in those members at once: the promoted
// node lacks every write since the cut, the locks granted or renewed
// meanwhile included (and a lease older than the cut may have run out
// there). Every other time the promoted servers are then left without a
// replica to rotate their replication IDs (rotateAfterTakeover). At once:
// one member after another, a holder's renewal would put
// its lock back on the first promoted node before the second is. A probe,
// locked once the replicas are cut, is held through it; the returned stop
// ends the probe.
func (s *shardSoak) staleTakeover() (stop func()) {
	shard, members := s.pickShard()
	rotate := s.rng.IntN(2) == 0
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, i := range members {
		m := s.lab.Members[i]
		if err := m.Settled(ctx); err != nil {
			s.t.Fatalf("sharded soak: member %d before cutting shard %d's replica: %v", i, shard, err)
		}
		if err := m.Shards[shard].CutReplica(ctx); err != nil {
			s.t.Fatalf("sharded soak: member %d: %v", i, err)
		}
	}
	_, stop = s.probe(shard)
	staleStop := func() {}
	if rotate {
		staleStop = s.staleHold(shard)
	}
	pause(ctx, shardSoakTTL/2+time.Duration(s.rng.Int64N(int64(shardSoakTTL))))
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for k, i := range members {
		wg.Go(func() {
			if err := s.lab.Members[i].Shards[shard].Failover(ctx); err != nil {
				errs[k] = fmt.Errorf("member %d: failover of shard %d: %w", i, shard, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.t.Fatalf("sharded soak: %v", err)
	}
	s.promoted += len(members)
	if rotate {
		heal, probeStop := s.rotateAfterTakeover(ctx, shard, members), stop
		return func() { heal(); staleStop(); probeStop() }
	}
	return stop
}

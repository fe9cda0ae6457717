package chaos_test

import (
	"context"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// The sharded soak's settings. A restarted cluster primary answers
// CLUSTERDOWN for about 2 s: a lease must outlast that, or a holder would
// always be told of its loss before a restarted shard could grant again,
// and restarts would never be put to the test. The node timeout leaves room
// for a redirection (MOVED, ASK) within one call.
const (
	shardSoakTTL     = 3 * time.Second
	shardSoakTimeout = 100 * time.Millisecond
	shardLossMargin  = max(shardSoakTimeout, shardSoakTTL/10)
)

// takeoverEnv, set to 0, leaves out the replicas and the fault of a stale
// replica promoted by TAKEOVER (which the library survives since a server
// counts for a slot from when it took it over: docs/SHARDS.md, "Failovers
// and moved slots"): half the servers, for a lighter run.
const takeoverEnv = "SOAK_TAKEOVER"

// onlyEnv, when set, keeps only the faults whose kind contains it, in
// either soak: a reproduction of one fault row (e.g. SOAK_ONLY="at once").
const onlyEnv = "SOAK_ONLY"

// TestShardSoak is TestSoak on three members that are each a Redis Cluster
// of three shards: contention on keys of every shard while random faults,
// each on one shard of one or two members, follow one another — a shard
// killed and restarted empty after more than a TTL, restarted empty at
// once, frozen (SIGSTOP), slowed, blackholed, and a slot of a held key
// moved to another shard (in one to three members), and a replica cut off
// from its primary and then promoted by CLUSTER FAILOVER TAKEOVER without
// what it missed, every other time then left without a replica until it
// rotates its replication ID (unless SOAK_TAKEOVER=0: then no replicas
// either). Every client sets the restart
// guard to the soak's TTL, as TestSoak does, for the same reason: restarts
// every few seconds keep every primary young. The history must have no
// overlap and no token regression, and every replaced Client must close;
// holds that went on past Until() are reported (reportLate).
//
//	go test ./chaos -run ShardSoak -v -soak.dur=2m -soak.seed=N
func TestShardSoak(t *testing.T) {
	if *soakDur <= 0 {
		t.Skip("sharded soak skipped: set -soak.dur (e.g. go test ./chaos -run ShardSoak -soak.dur=2m -soak.seed=1)")
	}
	takeover := os.Getenv(takeoverEnv) != "0"
	var labOpts []redislab.Option
	if takeover {
		labOpts = append(labOpts, redislab.WithReplicas())
	}
	lab := redislab.StartShards(t, 3, 3, labOpts...)
	trustShards(t, lab)
	m, clients := newShardMesh(t, lab, 3, redlock.WithTTL(shardSoakTTL),
		redlock.WithNodeTimeout(shardSoakTimeout), redlock.WithRestartGuard(shardSoakTTL))
	rec := chaos.NewRecorder()
	seats := make([]*seat, len(clients))
	for i, c := range clients {
		seats[i] = newSeat(c)
	}
	s := &shardSoak{t: t, lab: lab, m: m, seats: seats, rec: rec, faults: shardFaults(takeover, os.Getenv(onlyEnv)),
		rng: rand.New(rand.NewPCG(*soakSeed, 0x5a4d))}
	ws := s.workloads()
	closeAll := closeSeats(t, ws[0])
	t.Cleanup(closeAll) // after the holders stopped
	ctx := testkit.Context(t, *soakDur+5*time.Minute)
	var stops []func()
	for i, key := range s.longKeys {
		stops = append(stops, longHolds(ctx, rec, nil, seats[i%len(seats)], key, shardSoakTTL, *soakSeed+uint64(i)))
	}
	lag := probeLag(rec.Now)
	for i, w := range ws {
		stops = append(stops, w.start(t, *soakSeed+uint64(i)))
	}
	t.Logf("sharded soak: seed %d, %v, 3 members × 3 shards (replicas: %v), 3 clients; keys by shard: %v",
		*soakSeed, *soakDur, takeover, s.keysByShard())
	for deadline := time.Now().Add(*soakDur); time.Now().Before(deadline) && !t.Failed(); {
		s.episode(ctx)
		pause(ctx, 100*time.Millisecond+time.Duration(s.rng.Int64N(int64(shardSoakTTL/3))))
	}
	for _, stop := range stops {
		stop()
	}
	lag.stop()
	closeAll()
	s.report(lag, ws)
}

// trustShards vouches for every primary of every member (TrustStart on the
// member's cluster client), so that the brand-new lab is usable at once.
func trustShards(t *testing.T, lab *redislab.Sharded) {
	t.Helper()
	ctx := testkit.Context(t, 30*time.Second)
	for i, c := range lab.ClusterClients(t) {
		if err := redlock.TrustStart(ctx, c); err != nil {
			t.Fatalf("member %d: TrustStart: %v", i, err)
		}
	}
}

// A shardSoak runs fault episodes on a sharded lab.
type shardSoak struct {
	t        *testing.T
	lab      *redislab.Sharded
	m        *shardMesh
	seats    []*seat
	rec      *chaos.Recorder
	faults   []shardFault
	rng      *rand.Rand
	keys     []string // every key in use (LockMany's: one, its slot's)
	longKeys []string // one per shard, held long and renewed (longHolds)
	episodes []episode
	moved    int // slot moves, one per member
	promoted int // stale replicas promoted
	rotated  int // of them, those that rotated their replication IDs (rotateAfterTakeover)
	// staleHolds counts the unrenewed holds through a rotation (staleHold),
	// staleGrants their rivals' grants.
	staleHolds  int
	staleGrants atomic.Int64
	probes      int // probe keys held through a fault (probe)
}

// workloads returns the holders, over the soak's seats and into its
// Recorder, with keys on every shard: per client a waiting and a trying
// holder of Lock on one key of each shard, of LockMany (1–3 of 4 keys of
// one slot) on shard 0, of RLock/Lock on shard 1 and of Acquire on shard 2;
// and on each shard's long key (s.longKeys, held for 1 to 5 TTLs by
// longHolds through client i) a waiting and a trying rival through the
// next client, each holding it up to a TTL. The rivals keep the long key
// held, by holds that begin at any time and span faults, and contended: a
// fault that loses a lease shows as an overlap only if the lease was
// granted where it is lost and someone else asks for the key while it is
// held — the other holds last at most a few milliseconds.
func (s *shardSoak) workloads() []*contention {
	shards := s.lab.Members[0].Shards // every member starts with the same slot ranges
	newW := func(kind holdKind, key string) *contention {
		s.keys = append(s.keys, key)
		return &contention{rec: s.rec, seats: s.seats, goroutines: 1, tryers: 1, key: key, kind: kind, maxWork: 5 * time.Millisecond}
	}
	var ws []*contention
	for _, sh := range shards {
		ws = append(ws, newW(kindLock, sh.Keys("k", 1)[0]))
	}
	for i, sh := range shards {
		s.longKeys = append(s.longKeys, sh.Keys("long", 1)[0])
		rival := newW(kindLock, s.longKeys[i])
		rival.seats, rival.maxWork = s.seats[(i+1)%len(s.seats):][:1], shardSoakTTL
		ws = append(ws, rival)
	}
	many := sameSlotKeys(shards[0], "m", len(manyKeys))
	w := newW(kindMany, many[0])
	w.many = many
	return append(ws, w, newW(kindReadWrite, shards[1].Keys("rw", 1)[0]), newW(kindPermit, shards[2].Keys("sem", 1)[0]))
}

// keysByShard returns the keys in use per starting shard, for the log.
func (s *shardSoak) keysByShard() [][]string {
	out := make([][]string, len(s.lab.Members[0].Shards))
	for _, k := range s.keys {
		for i, sh := range s.lab.Members[0].Shards {
			if slot := redislab.Slot(k); slot >= sh.First && slot <= sh.Last {
				out[i] = append(out[i], k)
			}
		}
	}
	return out
}

// episode injects one random fault, lets it last, and heals it. Fresh
// clients replace 1 or 2 of the clients right after a restart or a
// promotion, and one client after a third of the other episodes.
func (s *shardSoak) episode(ctx context.Context) {
	f := s.faults[s.rng.IntN(len(s.faults))]
	e := episode{kind: f.kind, from: s.rec.Now()}
	heal := f.inject(s)
	if f.restarts == atInject {
		e.fresh += s.draw(1 + s.rng.IntN(2))
	}
	pause(ctx, max(f.minLast, shardSoakTTL/3+time.Duration(s.rng.Int64N(int64(shardSoakTTL)))))
	e.to = s.rec.Now()
	heal()
	switch {
	case f.restarts == atHeal:
		e.fresh += s.draw(1 + s.rng.IntN(2))
	case s.rng.IntN(3) == 0:
		e.fresh += s.draw(1)
	}
	s.episodes = append(s.episodes, e)
}

// draw replaces n random clients by brand-new ones and returns n.
func (s *shardSoak) draw(n int) int {
	for _, c := range randomSubset(s.rng, len(s.seats), n) {
		s.seats[c].replace(s.m.fresh(s.t, c))
	}
	return n
}

// report checks the history and logs the figures, per fault.
func (s *shardSoak) report(lag *lagLog, ws []*contention) {
	t := s.t
	fresh := 0
	for _, e := range s.episodes {
		fresh += e.fresh
	}
	t.Logf("worst timer lateness in this process during the soak: %v; %d fresh clients drawn; %d slot moves; %d stale replicas promoted, %d of them then rotating their replication IDs (%d unrenewed holds through it, %d grants to their rivals); %d probes held through a fault; %d dials to an unknown address",
		lag.max().Round(time.Millisecond), fresh, s.moved, s.promoted, s.rotated, s.staleHolds, s.staleGrants.Load(), s.probes, s.m.stray.Load())
	rep := report(t, s.rec)
	for _, o := range rep.Overlaps[:min(10, len(rep.Overlaps))] {
		t.Logf("overlap (seed %d) during %q: %v then %v, by %v", *soakSeed, kindAt(s.episodes, o.Second.Start, 0), o.First, o.Second, o.By)
	}
	if len(rep.Regressions) > 0 {
		t.Errorf("%d token regressions, want 0", len(rep.Regressions))
	}
	sem := ws[len(ws)-1].key
	if most := rep.MostAtOnce[sem]; most > permitLimit {
		t.Errorf("%d holders of the semaphore at once, limit %d", most, permitLimit)
	}
	reportLate(t, s.rec.History(), lag, shardLossMargin)
	kinds := make([]string, len(s.faults))
	for i, f := range s.faults {
		kinds[i] = f.kind
	}
	for _, row := range faultTable(s.rec.History(), nil, s.episodes, kinds, shardSoakTTL) {
		t.Log(row)
	}
}

package chaos_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// Slow masters under contention: one slow but within the node timeout, one
// whose replies arrive after it (the write landed, the reply is late), one
// whose requests arrive after it (the write lands after the attempt was
// given up and undone).
func TestNetworkLatency(t *testing.T) {
	lab := startLab(t, 5)
	m := newMesh(t, lab, 3)
	w := m.contention(3)
	ctx := testkit.Context(t, time.Minute)
	stop := w.start(t, 4)
	pause(ctx, 200*time.Millisecond)
	w.waitHeld(t)
	m.onNodes(func(p *faultproxy.Proxy) { p.SetLatency(nodeTimeout/5, nodeTimeout/5) }, 0)
	m.onNodes(func(p *faultproxy.Proxy) { p.SetLatency(0, 3*nodeTimeout) }, 1)
	m.onNodes(func(p *faultproxy.Proxy) { p.SetLatency(3*nodeTimeout, 0) }, 2)
	slow := w.rec.Now()
	pause(ctx, 3*ttl)
	m.heal()
	pause(ctx, ttl)
	settle(t, w, stop, slow)
}

// Masters cut off by a network fault: a minority first (service goes on
// through the others), then a majority (holders are told before validity
// ends, nobody acquires), then the network heals and service resumes. A row
// per fault: blackholed masters, whose requests and replies vanish, and lost
// replies, where masters apply every write but their answers vanish — the
// writes whose replies were lost are undone or expire.
func TestNetworkMinorityThenMajority(t *testing.T) {
	tests := []struct {
		name   string
		seed   uint64
		fault  func(*faultproxy.Proxy)
		what   string        // what the fault did to the masters
		outage time.Duration // how long the majority stays cut off after the loss
		healed string        // what clearing the fault is
	}{
		{"blackhole", 5, func(p *faultproxy.Proxy) { p.SetBlackhole(true) }, "were blackholed", ttl, "the network healed"},
		{"lost replies", 6, func(p *faultproxy.Proxy) { p.SetDropReplies(true) }, "lost their replies", ttl / 2, "replies came back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lab := startLab(t, 5)
			m := newMesh(t, lab, 3)
			w := m.contention(1)
			ctx := testkit.Context(t, time.Minute)
			long := longHold(t, ctx, w.rec, m.clients[0])
			stop := w.start(t, tt.seed)
			pause(ctx, 200*time.Millisecond)
			w.waitHeld(t)
			m.onNodes(tt.fault, 0, 1)
			minority := w.rec.Now()
			pause(ctx, 2*ttl)
			// A minority down must not stop the contenders (it once did: waiters
			// lost their place in line, or a late refusal left a stale first in
			// line; see CHANGELOG.md, "History", the chaos lab's bug 3).
			requireLive(t, w.rec, minority, "2 of 5 masters "+tt.what)
			m.onNodes(tt.fault, 2)
			cut := w.rec.Now() + 2*nodeTimeout // attempts in flight may still win
			requireLoss(t, long, 2*ttl)
			pause(ctx, tt.outage)
			healed := w.rec.Now()
			m.heal()
			w.waitResumed(t, healed, tt.healed)
			rep := settle(t, w, stop, healed)
			requireNoneBetween(t, w.rec, cut, healed, "3 of 5 masters "+tt.what)
			requireToldInTime(t, rep)
		})
	}
}

// Partitions that split the clients from different minorities: each client
// reaches its own subset of the masters (client A nodes 0,1,2, client B
// nodes 2,3,4, client C nodes 0,1,3,4 ...), re-drawn every few hundred
// milliseconds, mid-lease. Any two majorities share a master, so two
// clients can never both win.
func TestNetworkPartitionedClients(t *testing.T) {
	lab := startLab(t, 5)
	m := newMesh(t, lab, 3)
	w := m.contention(1)
	w.tryers = 1
	ctx := testkit.Context(t, time.Minute)
	long := longHold(t, ctx, w.rec, m.clients[0])
	stop := w.start(t, 7)
	rng := rand.New(rand.NewPCG(7, 7))
	m.reach(0, 0, 1, 2)
	m.reach(1, 2, 3, 4)
	m.reach(2, 0, 1, 3, 4)
	pause(ctx, ttl)
	m.reach(0, 0, 1) // client A falls into a minority: its long hold is lost
	requireLoss(t, long, 2*ttl)
	for range 5 {
		for c := range m.clients {
			m.reach(c, randomSubset(rng, 5, 2+rng.IntN(3))...) // 2 to 4 masters
		}
		pause(ctx, ttl/2+time.Duration(rng.Int64N(int64(ttl/2))))
	}
	healed := w.rec.Now()
	m.heal()
	w.waitResumed(t, healed, "the partition healed")
	rep := settle(t, w, stop, healed)
	requireToldInTime(t, rep)
}

// randomSubset returns k distinct indices of [0, n) in random order.
func randomSubset(rng *rand.Rand, n, k int) []int {
	return rng.Perm(n)[:k]
}

// requireLive fails t unless holds started after since, logging how many.
func requireLive(t *testing.T, rec *chaos.Recorder, since time.Duration, while string) {
	t.Helper()
	n := holdsSince(rec, since)
	t.Logf("acquisitions while %s: %d in %v", while, n, 2*ttl)
	if n == 0 {
		t.Errorf("no acquisition while %s: a minority down must not stop the lock", while)
	}
}

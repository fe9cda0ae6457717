package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// electionName is the scenario's election.
const electionName = "leader"

// An election is campaigners in loops over a mesh — each Client campaigns,
// leads for a random while, resigns, again — and a reader that asks Leader
// in a loop and follows Observe; every leadership and every sighting is
// recorded.
type election struct {
	rec      *chaos.Recorder
	mu       sync.Mutex
	asked    []chaos.Sighting // Leader's answers
	observed []chaos.Sighting // Observe's
	errs     []error
}

// run starts len(campaigners) campaigners and the reader, until the returned
// stop is called.
func (e *election) run(t *testing.T, campaigners []*redlock.Client, reader *redlock.Client) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, c := range campaigners {
		rng := rand.New(rand.NewPCG(uint64(i), 0xe1ec))
		wg.Go(func() { e.campaign(ctx, c, fmt.Sprint("c", i), rng) })
	}
	ch, err := reader.Observe(ctx, electionName)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	wg.Go(func() {
		for ld := range ch {
			now := e.rec.Now()
			e.mu.Lock()
			e.observed = append(e.observed, chaos.Sighting{Asked: now, At: now, Leader: ld})
			e.mu.Unlock()
		}
	})
	wg.Go(func() { e.ask(ctx, reader) })
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			for _, err := range e.errs[:min(5, len(e.errs))] {
				t.Errorf("election: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (e *election) campaign(ctx context.Context, c *redlock.Client, name string, rng *rand.Rand) {
	for i := 0; ctx.Err() == nil; i++ {
		actx, cancel := context.WithTimeout(ctx, attemptWait)
		value := fmt.Sprintf("%s#%d", name, i)
		l, err := c.Campaign(actx, electionName, value)
		cancel()
		if err != nil {
			if !errors.Is(err, redlock.ErrNotObtained) {
				e.fail(fmt.Errorf("%s: Campaign: %w", name, err))
			}
			continue
		}
		work := time.Duration(rng.Int64N(int64(30 * time.Millisecond)))
		err = e.rec.Lead(ctx, name, value, l, func(ctx context.Context) { pause(ctx, work) })
		var qe *redlock.QuorumError
		if err != nil && !errors.Is(err, redlock.ErrLockLost) && !errors.As(err, &qe) {
			e.fail(fmt.Errorf("%s: resign: %w", name, err))
		}
	}
}

// ask calls Leader in a loop, recording each leader it reports.
func (e *election) ask(ctx context.Context, c *redlock.Client) {
	for ctx.Err() == nil {
		asked := e.rec.Now()
		ld, err := c.Leader(ctx, electionName)
		switch {
		case err == nil:
			e.mu.Lock()
			e.asked = append(e.asked, chaos.Sighting{Asked: asked, At: e.rec.Now(), Leader: ld})
			e.mu.Unlock()
		case !errors.Is(err, redlock.ErrNoLeader) && ctx.Err() == nil:
			e.fail(fmt.Errorf("Leader: %w", err))
		}
		pause(ctx, 3*time.Millisecond)
	}
}

func (e *election) fail(err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
}

// Four Clients campaign in loops while masters blink (a majority
// blackholed for 100–300 ms), one is killed mid-leadership and restarted
// empty, and one is slowed: leaderships never overlap, terms strictly grow
// in leadership order, and what Leader and Observe report are leaderships
// that were, in term order, never after their lease.
func TestElectionUnderFaults(t *testing.T) {
	lab := startLab(t, 5)
	m := newMesh(t, lab, 5)
	warmUp(t, m.clients...)
	e := &election{rec: chaos.NewRecorder()}
	ctx := testkit.Context(t, time.Minute)
	stop := e.run(t, m.clients[:4], m.clients[4])
	rng := rand.New(rand.NewPCG(28, 1))
	pause(ctx, ttl)
	for range 3 {
		nodes := randomSubset(rng, 5, 3)
		m.onNodes(func(p *faultproxy.Proxy) { p.SetBlackhole(true) }, nodes...)
		pause(ctx, 100*time.Millisecond+time.Duration(rng.Int64N(int64(200*time.Millisecond))))
		m.onNodes(func(p *faultproxy.Proxy) { p.SetBlackhole(false) }, nodes...)
		pause(ctx, ttl)
	}
	lab.Kill(t, 0)
	pause(ctx, ttl/2)
	lab.Restart(t, true, 0)
	m.onNodes(func(p *faultproxy.Proxy) { p.SetLatency(20*time.Millisecond, 0) }, 1)
	pause(ctx, 2*ttl)
	m.heal()
	back := e.rec.Now()
	testkit.Eventually(t, 10*time.Second, "a leadership after the faults", func() bool { return holdsSince(e.rec, back) > 0 })
	pause(ctx, ttl)
	stop()
	rep := report(t, e.rec)
	requireSafe(t, rep, holdsSince(e.rec, back))
	history := e.rec.History()
	slack := 2 * closeGrace // a read in flight as the lease ends, on a loaded machine
	for _, r := range []struct {
		what   string
		told   []chaos.Sighting
		strict bool
	}{{"Leader", e.asked, false}, {"Observe", e.observed, true}} {
		bad := chaos.CheckSightings(history, electionName, r.told, r.strict, slack)
		t.Logf("%s reported %d leaders, %d misreports", r.what, len(r.told), len(bad))
		for _, m := range bad[:min(5, len(bad))] {
			t.Errorf("%s: %v", r.what, m)
		}
		if len(r.told) == 0 {
			t.Errorf("%s reported no leader", r.what)
		}
	}
}

package chaos_test

import (
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// contend starts nClients independent clients (each with its own redis
// clients) over lab and returns holders for key "k": goroutines per client.
func contend(t *testing.T, lab *redislab.Lab, nClients, goroutines int, opts ...redlock.Option) *contention {
	t.Helper()
	var clients []*redlock.Client
	for range nClients {
		clients = append(clients, newClient(t, lab.Clients(t), retryFast))
	}
	return newContention(clients, goroutines, opts...)
}

// retryFast shortens the delays between attempts: more handoffs per second,
// so more chances to catch an overlap.
var retryFast = redlock.WithRetryDelay(time.Millisecond, 10*time.Millisecond)

// newContention returns holders of clients on key "k", each Lock with opts.
func newContention(clients []*redlock.Client, goroutines int, opts ...redlock.Option) *contention {
	seats := make([]*seat, len(clients))
	for i, c := range clients {
		seats[i] = newSeat(c)
	}
	return &contention{rec: chaos.NewRecorder(), seats: seats, goroutines: goroutines,
		key: "k", maxWork: 5 * time.Millisecond, opts: opts}
}

// requireSafe fails t unless the report shows holds after the fault, no
// overlap (report already checks) and strictly increasing tokens.
func requireSafe(t *testing.T, rep chaos.Report, after int) {
	t.Helper()
	if len(rep.Regressions) > 0 {
		t.Errorf("%d token regressions, want 0", len(rep.Regressions))
	}
	if after == 0 {
		t.Errorf("no acquisition after the fault: service did not resume")
	}
}

// settle stops w's holders (stop is w.start's), checks the history (report)
// and requires service after since, with no token regression (requireSafe).
func settle(t *testing.T, w *contention, stop func(), since time.Duration) chaos.Report {
	t.Helper()
	stop()
	rep := report(t, w.rec)
	requireSafe(t, rep, holdsSince(w.rec, since))
	return rep
}

// requireToldInTime fails t unless every signalled loss came before Until().
func requireToldInTime(t *testing.T, rep chaos.Report) {
	t.Helper()
	if rep.Losses > 0 && rep.WorstMargin <= 0 {
		t.Errorf("a loss was signalled %v after Until(), want before", -rep.WorstMargin)
	}
}

// SIGKILL a master mid-lease under contention, and bring it back empty only
// after more than the maximum TTL (Redlock's "delayed restart"): by then every
// lease it granted has expired everywhere, so it cannot vote twice.
func TestCrashDelayedEmptyRestart(t *testing.T) {
	lab := startLab(t, 5)
	w := contend(t, lab, 3, 3)
	ctx := testkit.Context(t, time.Minute)
	stop := w.start(t, 1)
	pause(ctx, 300*time.Millisecond)
	w.waitHeld(t)
	lab.Kill(t, 0)
	pause(ctx, ttl+ttl/2) // down for more than the maximum TTL
	lab.Restart(t, true, 0)
	back := w.rec.Now()
	w.waitResumed(t, back, "the empty restart")
	w.waitHeld(t)
	lab.Kill(t, 1, 2) // the restarted master is now needed for every majority
	pause(ctx, ttl)
	settle(t, w, stop, back)
}

// SIGKILL masters mid-lease under contention, one after another, and
// restart each at once. A row per kind of restart:
//
//   - from the AOF: with appendfsync always (the lab's redis.conf) each comes
//     back with the leases it granted, so a restart is no more than an outage
//     — of about a TTL for each restarted master, with restart detection on.
//     Restart detection (on by default) does not count a restarted master for
//     one guard — the TTL — after a client first sees it: with three of them
//     restarted in a row, service comes back within about a TTL.
//   - empty, with fresh clients: the leases they granted are gone, and right
//     after each restart every client is replaced by a brand-new one (new
//     redis clients, a new Client), which never saw the masters' old run_ids
//     (issue 9, case 1, under contention). Restart detection, on by default,
//     does not count a master that started less than the guard ago, whoever
//     asks: no overlap, and tokens keep increasing (the fencing counters are
//     gone, the masters' clocks are not). A majority restarted within the
//     guard: service comes back once one of them has been up for the guard —
//     a second more, at worst, for a fresh client, which reads the start from
//     an uptime in whole seconds.
func TestCrashImmediateRestart(t *testing.T) {
	tests := []struct {
		name  string
		seed  uint64
		empty bool  // restart without the data
		fresh bool  // replace every client after each restart
		nodes []int // restarted in this order
	}{
		{"from the AOF", 2, false, false, []int{0, 1, 2, 0}},
		{"empty, fresh clients", 3, true, true, []int{0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lab := startLab(t, 5)
			w := contend(t, lab, 3, 3)
			if tt.fresh {
				t.Cleanup(closeSeats(t, w))
			}
			ctx := testkit.Context(t, time.Minute)
			stop := w.start(t, tt.seed)
			pause(ctx, 200*time.Millisecond)
			for _, n := range tt.nodes {
				w.waitHeld(t)
				lab.Restart(t, tt.empty, n) // SIGKILL, then start again
				if tt.fresh {
					for _, st := range w.seats {
						st.replace(freshClient(t, lab.Clients(t), retryFast))
					}
				}
				pause(ctx, 150*time.Millisecond)
			}
			back := w.rec.Now()
			w.waitResumed(t, back, "the immediate restarts")
			pause(ctx, 300*time.Millisecond)
			settle(t, w, stop, back)
		})
	}
}

package chaos_test

import (
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// The kinds of hold beyond Lock, each under the faults of its own
// scenarios: several keys at once, readers and writers, and a semaphore.
var kinds = []struct {
	name string
	kind holdKind
}{
	{"several keys", kindMany},
	{"readers and writers", kindReadWrite},
	{"semaphore", kindPermit},
}

// Under contention of each kind, SIGKILL a master mid-lease, then restart
// it empty at once (restart detection keeps it out for a TTL) and kill
// another: no overlap of writers (or of one permit), no token regression,
// never more than the limit of a semaphore's holders at once, and every loss
// told before the validity ended.
func TestKindsKillMasterMidLease(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			lab := startLab(t, 5)
			w := contend(t, lab, 2, 3)
			w.kind, w.tryers = k.kind, 1
			ctx := testkit.Context(t, time.Minute)
			stop := w.start(t, 11)
			pause(ctx, 200*time.Millisecond)
			w.waitHeld(t)
			if k.kind == kindPermit {
				w.waitShared(t)
			}
			lab.Kill(t, 0)
			pause(ctx, ttl/2)
			lab.Restart(t, true, 0)
			back := w.rec.Now()
			w.waitHeld(t)
			lab.Kill(t, 1)
			w.waitResumed(t, back, "the kills")
			pause(ctx, ttl)
			stop()
			rep := report(t, w.rec)
			requireSafe(t, rep, holdsSince(w.rec, back))
			requireToldInTime(t, rep)
			requireKindShown(t, k.kind, w.rec, rep)
		})
	}
}

// waitShared waits until two holders of the semaphore have held permits at
// the same time, so that the faults land on a semaphore in use as one: on a
// loaded machine a few seconds of contention may not have shown it yet.
func (w *contention) waitShared(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, "two holders of the semaphore at once", func() bool {
		return chaos.Check(w.rec.History()).MostAtOnce[w.key] >= 2
	})
}

// requireKindShown fails t unless the history shows what the kind is for —
// several keys held at once, readers inside together, permits side by side
// — and the semaphore's limit held.
func requireKindShown(t *testing.T, kind holdKind, rec *chaos.Recorder, rep chaos.Report) {
	t.Helper()
	switch kind {
	case kindMany:
		multi := 0
		for _, h := range rec.History() {
			for _, g := range rec.History() {
				if h.Key != g.Key && h.Client == g.Client && h.Start == g.Start {
					multi++
				}
			}
		}
		if multi == 0 {
			t.Errorf("no holding of several keys recorded")
		}
	case kindReadWrite:
		readers, writers := 0, 0
		for _, h := range rec.History() {
			if h.Shared {
				readers++
			} else {
				writers++
			}
		}
		t.Logf("%d reader holds, %d writer holds", readers, writers)
		if readers == 0 || writers == 0 {
			t.Errorf("%d reader and %d writer holds, want both", readers, writers)
		}
	case kindPermit:
		most := rep.MostAtOnce["k"]
		t.Logf("most holders of the semaphore at once: %d (limit %d)", most, permitLimit)
		if most > permitLimit {
			t.Errorf("%d holders at once, limit %d", most, permitLimit)
		}
		if most < 2 {
			t.Errorf("at most %d holder at once: the permits were not shared", most)
		}
	}
}

// A holder of each kind stalls past its validity (its watchdog stopped, as
// in a paused process), while another takes over what it held and writes
// with a larger token; the stalled holder's late write is rejected by the
// fenced store — per key for several keys, per permit for a semaphore, and
// for a reader, whose token is the last writer's, after a writer's write.
func TestKindsStalledHolderIsFenced(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			lab := startLab(t, 5)
			ctx := testkit.Context(t, 30*time.Second)
			store, resourceStore := resource(t, chaos.NewRecorder())
			a := newClient(t, lab.Clients(t), redlock.WithAutoRenew(false))
			b := newClient(t, lab.Clients(t))
			var (
				stalled, next *redlock.Lock
				err           error
				storeKey      string // where both write
			)
			switch k.kind {
			case kindMany:
				if stalled, err = a.LockMany(ctx, []string{"x", "y"}); err == nil {
					next, err = b.LockMany(ctx, []string{"y", "z"})
				}
				storeKey = "y"
			case kindReadWrite:
				if stalled, err = a.RLock(ctx, "k"); err == nil {
					next, err = b.Lock(ctx, "k")
				}
				storeKey = "k"
			case kindPermit:
				var filler *redlock.Lock // holds the other permit throughout
				if filler, err = b.Acquire(ctx, "k", 2); err == nil {
					defer filler.Unlock(ctx)
					if stalled, err = a.Acquire(ctx, "k", 2); err == nil {
						next, err = b.Acquire(ctx, "k", 2)
					}
				}
			}
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			tokenFor := func(l *redlock.Lock) (string, int64) {
				if l.Permit() >= 0 {
					return "permit", l.Token()
				}
				return storeKey, l.TokenOf(storeKey)
			}
			if k.kind == kindPermit && next.Permit() != stalled.Permit() {
				t.Fatalf("next holds permit %d, the stalled holder %d", next.Permit(), stalled.Permit())
			}
			if err := stalled.Err(); err == nil {
				t.Fatalf("the next holder got in while the stalled one's lock was still valid")
			}
			key, tn := tokenFor(next)
			_, ts := tokenFor(stalled)
			if !store.Write(key, tn) {
				t.Errorf("the next holder's write (token %d) rejected", tn)
			}
			if store.Write(key, ts) {
				t.Errorf("the stalled holder's late write (token %d) accepted after the next one's (token %d)", ts, tn)
			}
			t.Logf("stalled token %d, next %d", ts, tn)
			requireFenced(t, store, resourceStore)
			next.Unlock(ctx)
		})
	}
}

package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// nodeFailures records every NodeFailed event: op, node and error.
type nodeFailures struct {
	redlock.NopObserver
	mu     sync.Mutex
	events []string
	errs   map[string]error
}

func (f *nodeFailures) NodeFailed(_ context.Context, op, _ string, v redlock.NodeVote) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := fmt.Sprintf("%s node %d", op, v.Node)
	f.events = append(f.events, e)
	if f.errs == nil {
		f.errs = map[string]error{}
	}
	f.errs[e] = v.Err
}

// seen returns the error reported for event e ("lock node 2"), and whether
// it was reported.
func (f *nodeFailures) seen(e string) (error, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	err, ok := f.errs[e]
	return err, ok
}

// A frozen master whose calls the others outvote: each round is won (or
// released) without it, and its abandoned call — lock, extend, unlock —
// still reaches NodeFailed, as a timeout, once the late window is over.
func TestAbandonedCallsReported(t *testing.T) {
	l := safetyLab(t, 3)
	obs := &nodeFailures{}
	c := newClient(t, l.Clients(t), redlock.WithObserver(obs), redlock.WithAutoRenew(false))
	ctx := ctxFor(t, 30*time.Second)
	// One lock first, so that every master has answered once: the frozen
	// one's vote is then the only one missing.
	warm, err := c.Lock(ctx, "warm")
	if err != nil {
		t.Fatalf("Lock before the freeze: %v", err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatalf("Unlock before the freeze: %v", err)
	}
	l.Pause(t, 2)
	t.Cleanup(func() { l.Resume(t, 2) })

	lk, err := c.Lock(ctx, "frozen-one")
	if err != nil {
		t.Fatalf("Lock with one master of three frozen: %v", err)
	}
	awaitReport(t, obs, "lock node 2")
	if err := lk.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	awaitReport(t, obs, "extend node 2")
	if err := lk.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	awaitReport(t, obs, "unlock node 2")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for _, e := range obs.events {
		if e != "lock node 2" && e != "extend node 2" && e != "unlock node 2" {
			t.Errorf("NodeFailed %s: only node 2 is frozen", e)
		}
	}
}

// awaitReport waits until obs saw event e, reported as a timeout.
func awaitReport(t *testing.T, obs *nodeFailures, e string) {
	t.Helper()
	eventually(t, 10*time.Second, "NodeFailed "+e, func() bool { _, ok := obs.seen(e); return ok })
	if err, _ := obs.seen(e); !errors.Is(err, quorum.ErrTimeout) {
		t.Errorf("NodeFailed %s: %v, want a timeout (quorum.ErrTimeout)", e, err)
	}
}

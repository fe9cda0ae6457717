package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// A token names one node of one round; it is the Value of that node's answer.
type token struct{ round, node int }

// A trial is one randomly drawn round: the nodes' answers, the order in which
// they are released, and how the round may end early.
type trial struct {
	id       int
	votes    []quorum.Vote[token] // what each node answers when released
	honours  []bool               // whether the node gives up when its ctx ends
	order    []int                // release order
	endAt    int                  // the end event comes before order[endAt]
	end      string               // "", "timeout" or "cancel"
	need     int
	decider  string // "", "never" or "unlock"
	yielding []bool // yield the processor before releasing order[i]
}

func drawTrial(rng *rand.Rand, id int) trial {
	n := 1 + rng.IntN(7)
	tr := trial{
		id: id, votes: make([]quorum.Vote[token], n), honours: make([]bool, n),
		order: rng.Perm(n), endAt: rng.IntN(n + 1), need: rng.IntN(n + 1),
		end:     []string{"", "timeout", "cancel"}[rng.IntN(3)],
		decider: []string{"", "never", "unlock"}[rng.IntN(3)],
	}
	for i := range n {
		tr.votes[i] = quorum.Vote[token]{Outcome: quorum.Granted + quorum.Outcome(rng.IntN(3)), Value: token{id, i}}
		if tr.votes[i].Outcome == quorum.Failed {
			tr.votes[i].Err = errNode
		}
		tr.honours[i] = rng.IntN(3) == 0
		tr.yielding = append(tr.yielding, rng.IntN(2) == 0)
	}
	return tr
}

// TestRunDeliversEveryVoteExactlyOnce runs many random rounds at once and
// checks that each node's answer is delivered exactly once: in the returned
// tally, or to Late — never both, never neither.
func TestRunDeliversEveryVoteExactlyOnce(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var wg sync.WaitGroup
	// Rounds are numbered from 1: node 0 of a round 0 would answer
	// token{}, the Value of the round's own synthetic failures.
	for id := 1; id <= 1000; id++ {
		tr := drawTrial(rng, id)
		wg.Go(func() {
			if err := tr.run(); err != nil {
				t.Errorf("round %d (seed %d, %+v): %v", id, seed, tr, err)
			}
		})
	}
	wg.Wait()
}

// run plays the trial and checks its deliveries.
func (tr trial) run() error {
	n := len(tr.votes)
	fc := clock.NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make([]chan struct{}, n)
	for i := range release {
		release[i] = make(chan struct{})
	}

	var mu sync.Mutex
	sent := make([]quorum.Vote[token], n) // what each call returned
	callGID := make([]uint64, n)
	late := make([][]lateToken, n)
	var goroutines sync.WaitGroup
	var spawned atomic.Int64
	q := quorum.Round[token]{
		Nodes: n, Need: tr.need, Timeout: timeout, Clock: fc, Decided: deciders[tr.decider],
		Go: func(f func()) { spawned.Add(1); goroutines.Go(f) },
		Late: func(node int, v quorum.Vote[token]) {
			mu.Lock()
			defer mu.Unlock()
			late[node] = append(late[node], lateToken{v, goid()})
		},
	}
	call := func(ctx context.Context, node int) quorum.Vote[token] {
		v := tr.votes[node]
		select {
		case <-release[node]:
		case <-honoured(ctx, tr.honours[node]):
			v = quorum.Vote[token]{Outcome: quorum.Failed, Value: token{tr.id, node}, Err: ctx.Err()}
		}
		mu.Lock()
		defer mu.Unlock()
		sent[node], callGID[node] = v, goid()
		return v
	}

	running, stop := context.WithCancel(context.Background())
	defer stop()
	var releaser sync.WaitGroup
	releaser.Go(func() {
		for k := 0; k <= n; k++ {
			if k == tr.endAt {
				tr.endRound(running, fc, cancel)
			}
			if k < n {
				if tr.yielding[k] {
					runtime.Gosched()
				}
				close(release[tr.order[k]])
			}
		}
	})
	tally := q.Run(ctx, call)
	stop()
	sleepers := fc.Sleepers()
	releaser.Wait()
	goroutines.Wait()

	if sleepers != 0 {
		return fmt.Errorf("%d timers left on the clock after Run, want 0", sleepers)
	}
	if tr.decider == "" && tally.Count(quorum.Pending) > 0 && !tally.Settled() {
		return fmt.Errorf("Run returned %v with votes pending, yet not settled", &tally)
	}
	return checkDeliveries(tally, sent, late, callGID, spawned.Load())
}

type lateToken struct {
	vote quorum.Vote[token]
	gid  uint64
}

var deciders = map[string]func(*quorum.Tally[token]) bool{
	"":       nil,
	"never":  func(*quorum.Tally[token]) bool { return false },
	"unlock": func(t *quorum.Tally[token]) bool { return t.Count(quorum.Refused) >= t.Need },
}

// honoured returns ctx.Done() for a node that honours its ctx, and a channel
// that never closes for one that does not.
func honoured(ctx context.Context, honours bool) <-chan struct{} {
	if honours {
		return ctx.Done()
	}
	return nil
}

// endRound times the round out or cancels it, as the trial says.
func (tr trial) endRound(running context.Context, fc *clock.Fake, cancel context.CancelFunc) {
	switch tr.end {
	case "timeout":
		// Once Run has returned its timer is gone: skip the wait then.
		if fc.WaitForSleepers(running, 1) == nil {
			fc.Advance(timeout)
		}
	case "cancel":
		cancel()
	}
}

// checkDeliveries checks that each node's answer is either in the tally or
// passed to Late, exactly once, and that Go started one goroutine per call
// and one per late vote found while the round closed.
func checkDeliveries(tally quorum.Tally[token], sent []quorum.Vote[token], late [][]lateToken, callGID []uint64, spawned int64) error {
	var errs []error
	drained := int64(0)
	for i, v := range tally.Votes {
		synthetic := v.Outcome == quorum.Failed && v.Value == token{} &&
			(errors.Is(v.Err, quorum.ErrTimeout) || v.Err == context.Canceled)
		switch {
		case v.Outcome != quorum.Pending && !synthetic:
			if v != sent[i] || len(late[i]) != 0 {
				errs = append(errs, fmt.Errorf("node %d: tally has %+v and Late got %+v, want the answer %+v in the tally only", i, v, late[i], sent[i]))
			}
		case len(late[i]) != 1 || late[i][0].vote != sent[i]:
			errs = append(errs, fmt.Errorf("node %d: tally has %+v and Late got %+v, want the answer %+v once in Late", i, v, late[i], sent[i]))
		case late[i][0].gid != callGID[i]:
			drained++
			if !synthetic {
				errs = append(errs, fmt.Errorf("node %d: pending vote reached Late on a new goroutine, want the call's", i))
			}
		}
	}
	if want := int64(len(tally.Votes)) + drained; spawned != want {
		errs = append(errs, fmt.Errorf("Go ran %d times, want %d (%d calls, %d late deliveries)", spawned, want, len(tally.Votes), drained))
	}
	return errors.Join(errs...)
}

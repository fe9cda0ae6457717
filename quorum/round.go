package quorum

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
)

// A Call performs one round's operation on one node. ctx carries the
// per-node timeout; a Call that ignores it is still bounded, because the
// Round stops waiting for it at the timeout and counts it as Failed.
type Call[T any] func(ctx context.Context, node int) Vote[T]

// A Round describes how one operation is fanned out. The zero value of each
// optional field selects the documented default. A Round may be reused and
// run concurrently.
type Round[T any] struct {
	Nodes   int           // number of nodes, numbered 0..Nodes-1
	Need    int           // grants for success; 0 means Majority(Nodes)
	Timeout time.Duration // per-node timeout; every call starts at once, so it is also the round's
	Clock   clock.Clock   // nil means clock.Real()

	// Decided reports whether the round can stop waiting; nil means
	// (*Tally).Settled. Run stops anyway once no vote is pending.
	Decided func(*Tally[T]) bool
	// Go starts a goroutine for each call; nil means the go statement. A
	// caller that must know when abandoned calls end supplies its own.
	Go func(func())
	// Late, when set, receives each vote that arrives after Run decided —
	// including the real answer of a call that was counted as timed out.
	// It runs on the call's goroutine. An answer already sent when Run stops
	// waiting (at the timeout, or when ctx ends) is counted, never late.
	Late func(node int, v Vote[T])
}

type answer[T any] struct {
	node int
	vote Vote[T]
}

// Run calls call for every node in parallel and returns as soon as the round
// is decided, when every node has answered, when the timeout passes (calls
// still running are then Failed with ErrTimeout), or when ctx ends (they are
// then Failed with ctx.Err()). An answer that came before Run stopped
// waiting is counted, even one read only then. Votes of calls still running when Run returns
// are Pending in the tally and go to Late. With Nodes 0 it calls nothing
// and returns a lost tally; a Timeout ≤ 0 gives every call an ended ctx. A
// nil ctx panics, as context.WithTimeout does.
func (r *Round[T]) Run(ctx context.Context, call Call[T]) Tally[T] {
	need := r.Need
	if need == 0 {
		need = Majority(r.Nodes)
	}
	if r.Nodes == 0 {
		return Tally[T]{Votes: []Vote[T]{}, Need: need}
	}
	s := &state[T]{answers: make(chan answer[T], r.Nodes), call: call, late: r.Late}
	// The votes of up to seven nodes live in s: one allocation fewer. Only
	// the round writes them, never a call.
	t := Tally[T]{Need: need}
	if r.Nodes <= len(s.votes) {
		t.Votes = s.votes[:r.Nodes:r.Nodes]
	} else {
		t.Votes = make([]Vote[T], r.Nodes)
	}
	// Every call starts now, so one deadline serves them all; the last call
	// to return releases it (not Run: calls may outlive the decision).
	s.ctx, s.cancel = context.WithTimeout(ctx, r.Timeout)
	s.running.Store(int32(r.Nodes))
	// One function for every call: each run takes the next node, so that
	// a round allocates one closure, not one per node.
	run := s.run
	for range r.Nodes {
		r.spawn(run)
	}
	t.abandoned = newAbandoned(r.Nodes)
	gaveUp := r.collect(ctx, s, &t)
	// Answers already in when the round stopped count: a round that was
	// descheduled, or whose select picked the timer among ready answers,
	// must not drop a reply it has received. Only calls still running fail.
	s.close(&t)
	if gaveUp != nil {
		r.fail(&t, gaveUp)
	}
	return t
}

// collect counts s's answers into t until the round is decided, every node
// has answered, the timeout passes or ctx ends; it returns why it gave up
// (nil if it did not). On the real clock the calls' shared deadline is the
// round's timeout: no timer of its own.
func (r *Round[T]) collect(ctx context.Context, s *state[T], t *Tally[T]) error {
	var expired <-chan time.Time
	var deadline <-chan struct{}
	if c := r.clock(); c == clock.Real() {
		deadline = s.ctx.Done()
	} else {
		timer := c.NewTimer(r.Timeout)
		defer timer.Stop()
		expired = timer.C()
	}
	for pending := r.Nodes; pending > 0 && !r.decided(t); {
		select {
		case a := <-s.answers:
			t.Votes[a.node] = a.vote
			t.abandoned.clear(a.node)
			pending--
		case <-expired:
			return ErrTimeout
		case <-deadline:
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case s.ctx.Err() == context.DeadlineExceeded:
				return ErrTimeout
			}
			// Released by the last call: its answer is on its way.
			deadline = nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// fail marks every pending vote Failed with err. The calls keep running, and
// their real answers go to Late.
func (r *Round[T]) fail(t *Tally[T], err error) {
	for i := range t.Votes {
		if t.Votes[i].Outcome == Pending {
			t.Votes[i] = Vote[T]{Outcome: Failed, Err: err}
		}
	}
}

func (r *Round[T]) decided(t *Tally[T]) bool {
	if r.Decided != nil {
		return r.Decided(t)
	}
	return t.Settled()
}

func (r *Round[T]) spawn(f func()) {
	if r.Go != nil {
		r.Go(f)
		return
	}
	go f()
}

func (r *Round[T]) clock() clock.Clock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.Real()
}

// state is what a round's calls share with its decider: whether the round is
// still collecting, under a mutex so that no answer is lost between "still
// collecting" and "late".
type state[T any] struct {
	call    Call[T]
	late    func(int, Vote[T])
	ctx     context.Context    // the calls' shared deadline
	cancel  context.CancelFunc // releases it
	next    atomic.Int32       // the node the next run calls
	running atomic.Int32       // calls not yet returned
	mu      sync.Mutex
	closed  bool
	answers chan answer[T] // buffered for every node: a send never blocks
	votes   [7]Vote[T]     // the tally's, up to seven nodes (Run)
}

// run calls the next node and delivers its vote.
func (s *state[T]) run() {
	i := int(s.next.Add(1) - 1)
	v := s.call(s.ctx, i)
	if s.running.Add(-1) == 0 {
		s.cancel()
	}
	s.deliver(i, v, s.late)
}

func (s *state[T]) deliver(node int, v Vote[T], late func(int, Vote[T])) {
	s.mu.Lock()
	if !s.closed {
		s.answers <- answer[T]{node, v}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if late != nil {
		late(node, v)
	}
}

// close stops collection. Answers sent before it are counted: each is the
// first and only answer of a node still Pending.
func (s *state[T]) close(t *Tally[T]) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for {
		select {
		case a := <-s.answers:
			t.Votes[a.node] = a.vote
			t.abandoned.clear(a.node)
		default:
			return
		}
	}
}

package quorum_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// timeout is the per-node timeout of every round under test. Only the fake
// clock ever ends a round by timeout: the real-time deadline that Run also puts
// on each call's ctx is an hour away.
const timeout = time.Hour

// patience bounds every wait of a test, so that a bug fails the test instead
// of hanging it. It is never what a test asserts on.
const patience = 10 * time.Second

var (
	epoch   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	errNode = errors.New("node: out of memory")
)

// A rig runs rounds against fake nodes scripted one letter per node: G, R and
// F answer at once (granted, refused, failed); g, r and f give the same answer
// only once released, ignoring their ctx, as a hung node would.
type rig struct {
	t       *testing.T
	script  string
	clock   *clock.Fake
	release chan struct{} // closed by releaseAll
	once    sync.Once
	all     sync.WaitGroup // Run and every goroutine started through Go
	ended   chan struct{}  // a value each time a goroutine started through Go returns
	spawned atomic.Int64   // calls to Go

	mu      sync.Mutex
	callGID map[int]uint64          // goroutine each node's call ran on
	ctxs    map[int]context.Context // ctx each node's call received
	late    []lateVote
}

type lateVote struct {
	node int
	vote quorum.Vote[string]
	gid  uint64 // goroutine Late ran on
}

func newRig(t *testing.T, script string) *rig {
	t.Helper()
	r := &rig{
		t:       t,
		script:  script,
		clock:   clock.NewFake(epoch),
		release: make(chan struct{}),
		ended:   make(chan struct{}, 2*len(script)+1),
		callGID: map[int]uint64{},
		ctxs:    map[int]context.Context{},
	}
	t.Cleanup(r.settle)
	return r
}

// round returns a Round over the rig's nodes that reports to the rig.
func (r *rig) round(need int) quorum.Round[string] {
	return quorum.Round[string]{
		Nodes:   len(r.script),
		Need:    need,
		Timeout: timeout,
		Clock:   r.clock,
		Go:      r.goFunc,
		Late:    r.onLate,
	}
}

// answer is what node answers under script letter c.
func answer(node int, c byte) quorum.Vote[string] {
	v := quorum.Vote[string]{Value: fmt.Sprintf("n%d", node)}
	switch c {
	case 'G', 'g':
		v.Outcome = quorum.Granted
	case 'R', 'r':
		v.Outcome = quorum.Refused
	case 'F', 'f':
		v.Outcome, v.Err = quorum.Failed, errNode
	default:
		panic("bad script letter " + string(c))
	}
	return v
}

func held(c byte) bool { return c >= 'a' && c <= 'z' }

func (r *rig) call(ctx context.Context, node int) quorum.Vote[string] {
	if node < 0 || node >= len(r.script) {
		r.t.Errorf("call(node %d), want a node in [0, %d)", node, len(r.script))
		return quorum.Vote[string]{}
	}
	r.mu.Lock()
	r.callGID[node], r.ctxs[node] = goid(), ctx
	r.mu.Unlock()
	if held(r.script[node]) {
		<-r.release
	}
	return answer(node, r.script[node])
}

func (r *rig) goFunc(f func()) {
	r.spawned.Add(1)
	r.all.Add(1)
	go func() {
		defer r.all.Done()
		f()
		r.ended <- struct{}{}
	}()
}

func (r *rig) onLate(node int, v quorum.Vote[string]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.late = append(r.late, lateVote{node, v, goid()})
}

// start runs q over the rig's nodes in a goroutine and returns where its
// tally will arrive.
func (r *rig) start(ctx context.Context, q quorum.Round[string]) <-chan quorum.Tally[string] {
	out := make(chan quorum.Tally[string], 1)
	r.all.Add(1)
	go func() {
		defer r.all.Done()
		out <- q.Run(ctx, r.call)
	}()
	return out
}

func (r *rig) await(out <-chan quorum.Tally[string]) quorum.Tally[string] {
	r.t.Helper()
	select {
	case t := <-out:
		return t
	case <-time.After(patience):
		r.t.Fatalf("Run did not return within %v", patience)
		return quorum.Tally[string]{}
	}
}

// counted wraps q's decider so that the test can wait until Run has counted
// n answers: Run consults Decided before its first wait and after each vote.
func (r *rig) counted(q *quorum.Round[string]) (waitFor func(n int)) {
	decide := q.Decided
	if decide == nil {
		decide = (*quorum.Tally[string]).Settled
	}
	seen := make(chan int, q.Nodes+1)
	q.Decided = func(t *quorum.Tally[string]) bool {
		seen <- len(t.Votes) - t.Count(quorum.Pending)
		return decide(t)
	}
	return func(n int) {
		r.t.Helper()
		deadline := time.After(patience)
		for {
			select {
			case got := <-seen:
				if got >= n {
					return
				}
			case <-deadline:
				r.t.Fatalf("Run did not count %d answers within %v", n, patience)
			}
		}
	}
}

// sleeping waits until Run has armed its timer on the fake clock.
func (r *rig) sleeping() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := r.clock.WaitForSleepers(ctx, 1); err != nil {
		r.t.Fatalf("Run armed no timer: %v", err)
	}
}

func (r *rig) releaseAll() { r.once.Do(func() { close(r.release) }) }

// settle releases every held node and waits until Run, every call and every
// Late delivery have ended.
func (r *rig) settle() {
	r.t.Helper()
	r.releaseAll()
	done := make(chan struct{})
	go func() { r.all.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(patience):
		r.t.Errorf("goroutines still running %v after every node was released", patience)
	}
}

// checkLate settles the rig and checks that exactly the held nodes' answers
// reached Late, once each, on the goroutine of their own call, and that Go
// started one goroutine per node and no more.
func (r *rig) checkLate() {
	r.t.Helper()
	r.settle()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[int]bool{}
	for _, l := range r.late {
		if seen[l.node] {
			r.t.Errorf("Late(node %d) called twice", l.node)
		}
		seen[l.node] = true
		if l.node < 0 || l.node >= len(r.script) || !held(r.script[l.node]) {
			r.t.Errorf("Late(node %d, %+v), want only held nodes of %q", l.node, l.vote, r.script)
			continue
		}
		if want := answer(l.node, r.script[l.node]); l.vote != want {
			r.t.Errorf("Late(node %d) got vote %+v, want %+v", l.node, l.vote, want)
		}
		if l.gid != r.callGID[l.node] {
			r.t.Errorf("Late(node %d) ran on goroutine %d, want its call's goroutine %d", l.node, l.gid, r.callGID[l.node])
		}
	}
	for i := range len(r.script) {
		if held(r.script[i]) && !seen[i] {
			r.t.Errorf("held node %d: Late never called, want its answer", i)
		}
	}
	if got, want := r.spawned.Load(), int64(len(r.script)); got != want {
		r.t.Errorf("Go called %d times, want %d (one per node)", got, want)
	}
}

// outcomes renders a tally one letter per node: G, R, F, or . for pending.
func outcomes[T any](t quorum.Tally[T]) string {
	b := make([]byte, len(t.Votes))
	for i, v := range t.Votes {
		b[i] = map[quorum.Outcome]byte{quorum.Pending: '.', quorum.Granted: 'G', quorum.Refused: 'R', quorum.Failed: 'F'}[v.Outcome]
	}
	return string(b)
}

// goid returns the id of the calling goroutine, read from the header of its
// stack trace ("goroutine 42 [running]:"), so that a test can tell on which
// goroutine a hook ran.
func goid() uint64 {
	buf := make([]byte, 64)
	f := bytes.Fields(buf[:runtime.Stack(buf, false)])
	id, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		panic("cannot parse goroutine id: " + err.Error())
	}
	return id
}

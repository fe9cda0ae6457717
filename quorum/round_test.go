package quorum_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// checkAnswered checks that every node the tally has an answer for (per want)
// holds that node's own vote, as scripted.
func checkAnswered(t *testing.T, r *rig, got quorum.Tally[string], want string) {
	t.Helper()
	if o := outcomes(got); o != want {
		t.Fatalf("tally outcomes = %q, want %q (script %q)", o, want, r.script)
	}
	for i, v := range got.Votes {
		if want[i] != '.' && !held(r.script[i]) && v != answer(i, r.script[i]) {
			t.Errorf("vote of node %d = %+v, want its answer %+v", i, v, answer(i, r.script[i]))
		}
	}
}

func TestRunReturnsOnceSettled(t *testing.T) {
	cases := []struct {
		name      string
		script    string // lower case: blocked until the round is over
		need      int
		want      string
		won, lost bool
	}{
		{"majority granted, rest blocked", "GGGgg", 0, "GGG..", true, false},
		{"majority refused, rest blocked", "RRRgg", 0, "RRR..", false, true},
		{"failures count against", "FFFgg", 0, "FFF..", false, true},
		{"refusals and failures", "RgFgR", 0, "R.F.R", false, true},
		{"one node grants", "G", 0, "G", true, false},
		{"one node refuses", "R", 0, "R", false, true},
		{"two nodes need both", "gR", 0, ".R", false, true},
		{"seven nodes granted", "GgGgGgG", 0, "G.G.G.G", true, false},
		{"seven nodes lost", "gFgFgFR", 0, ".F.F.FR", false, true},
		{"need 1 overrides majority", "gggGg", 1, "...G.", true, false},
		{"need 2 of 5", "gGgGg", 2, ".G.G.", true, false},
		{"need 5 of 5, one refuses", "ggRgg", 5, "..R..", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.script)
			got := r.await(r.start(context.Background(), r.round(c.need)))
			checkAnswered(t, r, got, c.want)
			wantNeed := c.need
			if wantNeed == 0 {
				wantNeed = quorum.Majority(len(c.script))
			}
			if got.Need != wantNeed {
				t.Errorf("Need = %d, want %d", got.Need, wantNeed)
			}
			if got.Won() != c.won || got.Lost() != c.lost {
				t.Errorf("Won, Lost = %t, %t, want %t, %t", got.Won(), got.Lost(), c.won, c.lost)
			}
			if n := r.clock.Sleepers(); n != 0 {
				t.Errorf("%d timers left on the clock after Run, want 0", n)
			}
			r.checkLate()
		})
	}
}

// Nodes that have not answered when Run ends — at the node timeout, or when
// its ctx is cancelled — fail with that reason and no value; the answers
// counted before stand, and Run leaves no timer behind. A row per end and
// script.
func TestRunFailsUnansweredNodes(t *testing.T) {
	type ending struct {
		name    string
		end     func(t *testing.T, r *rig, cancel context.CancelFunc)
		failed  func(error) bool // whether an unanswered node's error is the end's
		wantErr string           // failed, in words
	}
	timedOut := ending{
		name: "timeout",
		end: func(t *testing.T, r *rig, _ context.CancelFunc) {
			r.sleeping()
			r.clock.Advance(timeout - time.Nanosecond)
			if n := r.clock.Sleepers(); n != 1 {
				t.Fatalf("after Timeout−1ns: %d timers waiting, want Run's 1 still armed", n)
			}
			r.clock.Advance(time.Nanosecond)
		},
		failed: func(err error) bool {
			return errors.Is(err, quorum.ErrTimeout) && errors.Is(err, context.DeadlineExceeded)
		},
		wantErr: "one matching ErrTimeout and context.DeadlineExceeded",
	}
	cancelled := ending{
		name:    "cancel",
		end:     func(_ *testing.T, _ *rig, cancel context.CancelFunc) { cancel() },
		failed:  func(err error) bool { return err == context.Canceled },
		wantErr: "context.Canceled",
	}
	cases := []struct {
		ending
		what     string
		script   string
		answered int // answers to count before Run ends
		want     string
	}{
		{timedOut, "all silent", "ggggg", 0, "FFFFF"},
		{timedOut, "two grants in time", "GGggg", 2, "GGFFF"},
		{timedOut, "a refusal in time", "gRg", 1, "FRF"},
		{timedOut, "one node", "g", 0, "F"},
		{cancelled, "all blocked", "ggg", 0, "FFF"},
		{cancelled, "one grant counted", "Gggrg", 1, "GFFFF"},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+c.what, func(t *testing.T) {
			r := newRig(t, c.script)
			q := r.round(0)
			waitFor := r.counted(&q)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := r.start(ctx, q)
			waitFor(c.answered)
			c.end(t, r, cancel)
			got := r.await(out)
			checkAnswered(t, r, got, c.want)
			for i, v := range got.Votes {
				if !held(c.script[i]) {
					continue
				}
				if !c.failed(v.Err) {
					t.Errorf("node %d: Err = %v, want %s", i, v.Err, c.wantErr)
				}
				if v.Value != "" {
					t.Errorf("node %d: unanswered vote has Value %q, want none", i, v.Value)
				}
			}
			if n := r.clock.Sleepers(); n != 0 {
				t.Errorf("%d timers left on the clock after Run, want 0", n)
			}
			r.checkLate()
		})
	}
}

func TestRunGivesEachCallItsDeadline(t *testing.T) {
	type key struct{}
	soon := time.Now().Add(time.Minute) // well before the node timeout
	cases := []struct {
		name   string
		parent func() (context.Context, context.CancelFunc)
		// want is the deadline expected when Run started at start and ended at end.
		want func(start, end time.Time) (earliest, latest time.Time)
	}{
		{
			name:   "node timeout",
			parent: func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			want:   func(s, e time.Time) (time.Time, time.Time) { return s.Add(timeout), e.Add(timeout) },
		},
		{
			name:   "parent deadline is earlier",
			parent: func() (context.Context, context.CancelFunc) { return context.WithDeadline(context.Background(), soon) },
			want:   func(time.Time, time.Time) (time.Time, time.Time) { return soon, soon },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent, cancel := c.parent()
			defer cancel()
			r := newRig(t, "GGG")
			start := time.Now()
			r.await(r.start(context.WithValue(parent, key{}, "v"), r.round(0)))
			r.settle()
			end := time.Now()
			earliest, latest := c.want(start, end)
			// The deadline is on the real clock: Run derives it with
			// context.WithTimeout, whatever Round.Clock is.
			for i := range 3 {
				ctx := r.ctxs[i]
				if ctx == nil {
					t.Fatalf("node %d was never called", i)
				}
				d, ok := ctx.Deadline()
				if !ok || d.Before(earliest) || d.After(latest) {
					t.Errorf("node %d: ctx.Deadline() = %v, %t, want in [%v, %v]", i, d, ok, earliest, latest)
				}
				if got := ctx.Value(key{}); got != "v" {
					t.Errorf("node %d: ctx.Value = %v, want the parent's %q", i, got, "v")
				}
			}
		})
	}
}

func TestRunHonoursDecided(t *testing.T) {
	never := func(*quorum.Tally[string]) bool { return false }
	always := func(*quorum.Tally[string]) bool { return true }
	// An unlock is done once Need nodes no longer hold the lock.
	unlocked := func(t *quorum.Tally[string]) bool { return t.Count(quorum.Refused) >= t.Need }
	cases := []struct {
		name     string
		script   string
		need     int
		decided  func(*quorum.Tally[string]) bool
		answered int  // answers to count before releasing held nodes (at most Nodes−1: Run consults no decider once none is pending)
		release  bool // release held nodes before Run returns
		want     string
	}{
		// Settled would wait: 0 grants + 3 pending could still reach 2.
		{"unlock stops at Need refusals", "RRggg", 2, unlocked, 2, false, "RR..."},
		{"decided before any answer", "ggg", 0, always, 0, false, "..."},
		{"never decided stops when none pending", "GFRGR", 0, never, 0, false, "GFRGR"},
		{"never decided waits past a majority", "GGGgg", 0, never, 3, true, "GGGGG"},
		{"never decided waits past a loss", "RRRgr", 0, never, 3, true, "RRRGR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.script)
			q := r.round(c.need)
			q.Decided = c.decided
			waitFor := r.counted(&q)
			out := r.start(context.Background(), q)
			waitFor(c.answered)
			if c.release {
				r.releaseAll()
			}
			got := r.await(out)
			if c.release {
				// Every answer was counted, none is late.
				if o := outcomes(got); o != c.want {
					t.Fatalf("tally outcomes = %q, want %q", o, c.want)
				}
				r.settle()
				if len(r.late) != 0 || r.spawned.Load() != int64(len(c.script)) {
					t.Errorf("Late got %v and Go ran %d times, want no late votes and %d", r.late, r.spawned.Load(), len(c.script))
				}
				return
			}
			checkAnswered(t, r, got, c.want)
			r.checkLate()
		})
	}
}

func TestRunWithNoNodesReturnsAtOnce(t *testing.T) {
	for _, need := range []int{0, 2} {
		r := newRig(t, "")
		got := r.await(r.start(context.Background(), r.round(need)))
		wantNeed := need
		if need == 0 {
			wantNeed = quorum.Majority(0)
		}
		if len(got.Votes) != 0 || got.Need != wantNeed || got.Won() {
			t.Errorf("Need %d: tally %v, Won %t, want no votes, need %d, not won", need, &got, got.Won(), wantNeed)
		}
		if n := r.clock.Sleepers(); n != 0 {
			t.Errorf("Need %d: %d timers on the clock, want 0", need, n)
		}
		r.checkLate()
	}
}

// TestRunCountsAnswersReadyWhenItEnds makes an answer and the end of the
// round (timeout or cancellation) ready at once, by holding Run inside its
// first Decided call: a round descheduled past its timer with the reply
// waiting, or a select that picks the timer among ready cases at random.
// The answer, received before Run stopped waiting, must count every time
// (issue 25: renewals whose replies had come were dropped as timed out on
// a busy host), and never go to Late.
func TestRunCountsAnswersReadyWhenItEnds(t *testing.T) {
	for _, end := range []string{"timeout", "cancel"} {
		t.Run(end, func(t *testing.T) {
			for attempt := range 64 {
				if lateThroughGo(t, end) {
					t.Fatalf("attempt %d: an answer in before the round ended went to Late", attempt)
				}
			}
		})
	}
}

func lateThroughGo(t *testing.T, end string) (wasLate bool) {
	t.Helper()
	r := newRig(t, "g")
	q := r.round(0)
	entered, gate := make(chan struct{}), make(chan struct{})
	first := true
	q.Decided = func(t *quorum.Tally[string]) bool {
		if first {
			first = false
			close(entered)
			<-gate
		}
		return t.Settled()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := r.start(ctx, q)
	recv(t, entered, "Run's first Decided call")
	wantErr := context.Canceled
	if end == "timeout" {
		wantErr = quorum.ErrTimeout
		r.clock.Advance(timeout)
	} else {
		cancel()
	}
	r.releaseAll()
	recv(t, r.ended, "the node's goroutine to deliver its answer")
	close(gate)
	got := r.await(out)
	r.settle()

	v, want := got.Votes[0], answer(0, 'g')
	if v == want {
		if len(r.late) != 0 || r.spawned.Load() != 1 {
			t.Fatalf("answer counted, yet Late got %v and Go ran %d times, want none and 1", r.late, r.spawned.Load())
		}
		return false
	}
	if v.Outcome != quorum.Failed || v.Err != wantErr {
		t.Fatalf("vote = %+v, want %+v or Failed with %v", v, want, wantErr)
	}
	if len(r.late) != 1 || r.late[0].vote != want || r.late[0].gid == r.callGID[0] {
		t.Fatalf("Late got %+v, want one %+v on a goroutine other than the call's", r.late, want)
	}
	if got := r.spawned.Load(); got != 2 {
		t.Fatalf("Go ran %d times, want 2: the call and the late delivery", got)
	}
	return true
}

// recv waits for a value on ch, for at most patience.
func recv(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("waited %v for %s", patience, what)
	}
}

package redlock

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
)

// resetCounter is a clock whose AfterFunc timers count their Resets.
type resetCounter struct {
	clock.Clock
	resets atomic.Int32
}

func (c *resetCounter) AfterFunc(d time.Duration, f func()) clock.Timer {
	return &countedTimer{c.Clock.AfterFunc(d, f), &c.resets}
}

type countedTimer struct {
	clock.Timer
	n *atomic.Int32
}

func (t *countedTimer) Reset(d time.Duration) bool {
	t.n.Add(1)
	return t.Timer.Reset(d)
}

// Locks that come and go behind the watchdog's earliest due lock leave its
// timer alone (issue 26: every schedule and removal reset it, at every
// acquisition and Unlock); the timer moves only when the earliest changes.
func TestRenewerArmsOnlyForTheFirst(t *testing.T) {
	clk := &resetCounter{Clock: clock.NewFake(time.Unix(1_000_000, 0))}
	c := &Client{cfg: config{clock: clk}}
	r := &renewer{c: c}
	first := &Lock{heapIndex: -1}
	r.schedule(first, 10*time.Second)
	later := make([]*Lock, 10)
	for i := range later {
		later[i] = &Lock{heapIndex: -1}
		r.schedule(later[i], time.Duration(20+i)*time.Second)
	}
	for _, l := range later[:5] {
		r.remove(l)
	}
	if n := clk.resets.Load(); n != 0 {
		t.Errorf("the timer was reset %d times for locks behind the first, want 0", n)
	}
	r.remove(first) // the earliest changes: the timer follows
	if n := clk.resets.Load(); n != 1 {
		t.Errorf("after the first lock left, the timer was reset %d times, want 1", n)
	}
	for _, l := range later[5:] {
		r.remove(l)
	}
	if r.armed {
		t.Error("the timer is still armed with no lock scheduled")
	}
}

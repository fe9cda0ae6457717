package chaos_test

import (
	"sync"
	"time"
)

// A lagLog measures how late a timer fires in this process — a loss signal
// is such a timer — and remembers when: a loss signalled late while no timer
// of the process was late by as much is the library's doing, not CPU
// starvation's. It is safe for concurrent use.
type lagLog struct {
	now   func() time.Duration // the Recorder's clock
	done  chan struct{}
	ended chan struct{}

	mu    sync.Mutex
	worst time.Duration
	late  []lagSample // samples later than lagNoted, in time order
}

type lagSample struct{ at, late time.Duration }

const (
	lagTick  = 10 * time.Millisecond // the probe's timer
	lagNoted = 5 * time.Millisecond  // lateness worth remembering
)

// probeLag starts measuring on the clock now; stop ends it.
func probeLag(now func() time.Duration) *lagLog {
	g := &lagLog{now: now, done: make(chan struct{}), ended: make(chan struct{})}
	go g.run()
	return g
}

func (g *lagLog) run() {
	defer close(g.ended)
	for {
		start := time.Now()
		t := time.NewTimer(lagTick)
		select {
		case <-g.done:
			t.Stop()
			return
		case <-t.C:
		}
		late := time.Since(start) - lagTick
		g.mu.Lock()
		g.worst = max(g.worst, late)
		if late >= lagNoted {
			g.late = append(g.late, lagSample{at: g.now(), late: late})
		}
		g.mu.Unlock()
	}
}

// stop ends the probe and waits for it.
func (g *lagLog) stop() { close(g.done); <-g.ended }

// max returns the worst lateness seen.
func (g *lagLog) max() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.worst
}

// within returns the worst lateness of a probe timer that fired in
// [from, to] (a timer late by d fired d after it was due).
func (g *lagLog) within(from, to time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var worst time.Duration
	for _, s := range g.late {
		if s.at >= from && s.at-s.late <= to {
			worst = max(worst, s.late)
		}
	}
	return worst
}

// Package clock is the time source of quorumlock: an interface over the few
// parts of package time the lock needs, a real implementation backed by the
// monotonic clock, a fake one for deterministic tests, and the validity
// arithmetic of Redlock.
//
// A Clock is passed explicitly (never through a context) so that a test can
// swap it for a *Fake and move time by hand.
package clock

import "time"

// A Clock tells the time and schedules work. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now returns the current time. Readings of the real clock carry Go's
	// monotonic component, so differences between them are immune to
	// wall-clock jumps.
	Now() time.Time
	// Since returns the time elapsed since t.
	Since(t time.Time) time.Duration
	// NewTimer returns a Timer that delivers the time on its channel after d.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// A Timer is a single pending event, as returned by NewTimer or AfterFunc.
type Timer interface {
	// C is the channel on which a NewTimer timer delivers; nil for AfterFunc.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped it, false if it had already fired or been stopped.
	Stop() bool
	// Reset changes the timer to fire after d, as time.Timer.Reset does.
	Reset(d time.Duration) bool
}

// Real returns the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }

func (realClock) NewTimer(d time.Duration) Timer {
	return realTimer{time.NewTimer(d)}
}

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

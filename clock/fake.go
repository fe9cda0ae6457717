package clock

import (
	"context"
	"sort"
	"sync"
	"time"
)

// A Fake is a Clock whose time moves only when Advance is called. Timers due
// at or before the new time fire, in order of their due times, during
// Advance. The zero value is not usable; call NewFake.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever the set of timers changes
}

// NewFake returns a Fake clock that reads start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Since returns Now() − t.
func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

// NewTimer returns a timer that delivers on its channel once the fake time
// reaches Now()+d; d ≤ 0 delivers at once, as package time does. A reading
// not taken is not queued twice (a channel of one).
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{clock: f, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// AfterFunc returns a timer that calls fn in its own goroutine once the fake
// time reaches Now()+d; d ≤ 0 calls it at once, as package time does.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{clock: f, fn: fn}
	t.Reset(d)
	return t
}

// Advance moves the fake time forward by d and fires every timer that is then
// due, earliest first, before it returns (AfterFunc's functions start on
// their own goroutines). A negative d moves the time back and fires nothing.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	due := f.popDue()
	f.mu.Unlock()
	for _, t := range due {
		t.fire()
	}
}

// Sleepers returns the number of timers waiting to fire.
func (f *Fake) Sleepers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitForSleepers blocks until at least n timers are waiting, or ctx ends.
// Tests call it before Advance so that the code under test has armed its
// timers.
func (f *Fake) WaitForSleepers(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		count, changed := len(f.timers), f.changed
		f.mu.Unlock()
		if count >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// popDue removes and returns the timers due at f.now, earliest first.
// f.mu must be held.
func (f *Fake) popDue() []*fakeTimer {
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].due.Before(f.timers[j].due) })
	n := 0
	for n < len(f.timers) && !f.timers[n].due.After(f.now) {
		n++
	}
	due := append([]*fakeTimer(nil), f.timers[:n]...)
	f.timers = append(f.timers[:0], f.timers[n:]...)
	if n > 0 {
		f.notify()
	}
	return due
}

// remove drops t from the waiting timers and reports whether it was there.
// f.mu must be held.
func (f *Fake) remove(t *fakeTimer) bool {
	for i, w := range f.timers {
		if w == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.notify()
			return true
		}
	}
	return false
}

func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	clock *Fake
	due   time.Time
	ch    chan time.Time
	fn    func()
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.remove(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	f := t.clock
	f.mu.Lock()
	active := f.remove(t)
	t.due = f.now.Add(d)
	f.timers = append(f.timers, t)
	f.notify()
	due := f.popDue() // d ≤ 0 fires at once, as with package time
	f.mu.Unlock()
	for _, w := range due {
		w.fire()
	}
	return active
}

func (t *fakeTimer) fire() {
	if t.fn != nil {
		go t.fn()
		return
	}
	select {
	case t.ch <- t.due:
	default: // like time.Timer's channel of one: a reading not taken is not queued twice
	}
}

package redlock

import (
	"context"
	"errors"
	"time"
)

// renew is the watchdog: it extends the lock every TTL/3, and sooner after a
// failed attempt, until the lock ends. It runs on the renewal timer's
// goroutine; l.op keeps it from overlapping Extend or Unlock.
func (l *Lock) renew() {
	if !l.c.begin() {
		return
	}
	defer l.c.end()
	l.op.Lock()
	defer l.op.Unlock()
	err := l.extend(context.Background())
	if !errors.Is(err, ErrNotHeld) && !errors.Is(err, ErrClosed) { // not a renewal: the lock had ended
		l.cfg.observers.renewed(l.key, err)
	}
	switch {
	case err == nil:
		l.rearm(l.cfg.renewEvery())
	case errors.Is(err, ErrLockLost), l.Err() != nil:
		// The lock ended; finish already stopped the timers.
	default:
		// Too few answers this time; the expiry timer declares the loss if
		// no retry succeeds before the validity runs out.
		l.rearm(l.cfg.renewRetry())
	}
}

func (l *Lock) rearm(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.renewal.Reset(d)
	}
}

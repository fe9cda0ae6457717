package redlock

import (
	"context"
	"errors"
)

// Do acquires key as Lock does, runs fn while the lock is held, and releases
// it. fn's ctx carries the Lock (FromContext) and is cancelled as soon as
// the lock is lost or the Client closes, with the reason as its cause; fn
// should stop its work then.
//
// Do returns Lock's error if the lock was not obtained (ErrInvalid for a
// nil fn, nothing sent). Otherwise it returns fn's error, joined with
// ErrLockLost — one line, starting with ErrLockLost's, matching both — if
// the lock was lost before fn returned or Unlock found it gone, or with
// ErrClosed if the Client closed meanwhile. A release that too few nodes
// confirmed is not an error: the lock then expires with its TTL. If fn
// panics, the lock is released and the panic goes on.
func (c *Client) Do(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...Option) error {
	if fn == nil {
		return invalid("nil function")
	}
	l, err := c.Lock(ctx, key, opts...)
	if err != nil {
		return err
	}
	return l.Run(ctx, fn)
}

// Run runs fn while l is held, then releases l, as Do does, for a hold of
// any kind:
//
//	l, err := c.Acquire(ctx, "encoder", 4)
//	if err != nil {
//		return err
//	}
//	return l.Run(ctx, func(ctx context.Context) error { return encode(ctx, l.Permit()) })
//
// Run returns fn's error, joined with ErrLockLost or ErrClosed as Do's is
// when the hold ended before fn returned, and releases l even if fn panics.
// It does not call fn if l has ended already: it returns ErrNotHeld after
// Unlock, and for a lost Lock releases what is left of it and returns why
// it ended. A nil ctx or fn is refused with ErrInvalid, l left as it was.
// Once Run has released l, l.Unlock returns nil, so a deferred Unlock
// written right after acquiring is harmless around Run.
func (l *Lock) Run(ctx context.Context, fn func(ctx context.Context) error) (err error) {
	switch {
	case ctx == nil:
		return errNilContext
	case fn == nil:
		return invalid("nil function")
	}
	if ended := l.Err(); ended != nil {
		if !errors.Is(ended, ErrNotHeld) {
			l.unlockForRun(context.WithoutCancel(ctx)) // the nodes that still hold it
		}
		return ended
	}
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, lockKey{}, l))
	stop := context.AfterFunc(l.life, func() { cancel(l.Err()) })
	defer func() {
		stop()
		cancel(nil)
		// A loss, or a Client closed under fn, means the work may have
		// overlapped another holder's: say so. A release that too few nodes
		// confirmed is not: the hold expires with its TTL.
		if uerr := l.unlockForRun(context.WithoutCancel(ctx)); errors.Is(uerr, ErrLockLost) || errors.Is(uerr, ErrClosed) {
			err = endedUnder(err, uerr)
		}
	}()
	return fn(fctx)
}

// unlockForRun is Run's Unlock of l: once it ran, a caller's own Unlock of
// l (a deferred one, by habit) returns nil instead of ErrNotHeld.
func (l *Lock) unlockForRun(ctx context.Context) error {
	l.mu.Lock()
	l.byRun = true
	l.mu.Unlock()
	return l.Unlock(ctx)
}

// againErr is the error of an Unlock of a lock already released: nil if
// Run released it, else ErrNotHeld.
func (l *Lock) againErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byRun {
		return nil
	}
	return ErrNotHeld
}

// endedUnder returns the error of a Run whose fn returned fnErr while its
// hold ended for cause (ErrLockLost or ErrClosed): cause if fn returned
// nil, else one line starting with cause's and matching both.
func endedUnder(fnErr, cause error) error {
	if fnErr == nil {
		return cause
	}
	return &runError{fn: fnErr, cause: cause}
}

// A runError is a Run's fn error under a hold that ended meanwhile.
type runError struct{ fn, cause error }

func (e *runError) Error() string {
	return oneLine(e.cause.Error()) + " while the function ran; it returned: " + oneLine(e.fn.Error())
}
func (e *runError) Unwrap() []error { return []error{e.fn, e.cause} }

type lockKey struct{}

// FromContext returns the Lock that Do or Run holds while it runs the
// function it was given ctx for.
func FromContext(ctx context.Context) (*Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(*Lock)
	return l, ok
}

package autopipe

import (
	"context"
	"sync"
	"time"
)

// A batchCtx is the context of a sender's batches, reused from one batch to
// the next so that a batch costs no context and no timer of its own: never
// cancelled by a caller giving up, it ends at the deadline armed for the
// batch in flight (see Pipe.batchContext), when one reusable timer closes
// its Done channel; a new channel is made only for the batch after one that
// ran out of time. Its deadline and Done channel change between batches:
// it must not be kept past the Exec it was given to (go-redis keeps none).
type batchCtx struct {
	timer *time.Timer // closes done at deadline

	mu       sync.Mutex
	deadline time.Time // zero: none
	done     chan struct{}
	expired  bool // done is closed

	probe setupProbe // the sender's lone calls' (WithLoneProcess)
}

func newBatchCtx() *batchCtx {
	x := &batchCtx{done: make(chan struct{})}
	x.timer = time.AfterFunc(time.Hour, x.expire)
	x.timer.Stop()
	return x
}

// arm makes x the context of a batch ending at deadline (zero: none).
func (x *batchCtx) arm(deadline time.Time) {
	x.mu.Lock()
	if x.expired {
		x.done, x.expired = make(chan struct{}), false
	}
	x.deadline = deadline
	x.mu.Unlock()
	if !deadline.IsZero() {
		x.timer.Reset(time.Until(deadline))
	}
}

// disarm ends the batch: x keeps no deadline until armed again.
func (x *batchCtx) disarm() {
	x.timer.Stop()
	x.mu.Lock()
	x.deadline = time.Time{}
	x.mu.Unlock()
}

// expire is the timer: it ends the batch whose deadline has passed. The
// check on the clock guards against a timer that fired for the batch before.
func (x *batchCtx) expire() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.expired || x.deadline.IsZero() || time.Now().Before(x.deadline) {
		return
	}
	close(x.done)
	x.expired = true
}

func (x *batchCtx) Deadline() (time.Time, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.deadline, !x.deadline.IsZero()
}

func (x *batchCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.done
}

func (x *batchCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.expired {
		return context.DeadlineExceeded
	}
	return nil
}

// Value holds one value: the batch's setup probe, for the Pipe's own hook
// (setupHook).
func (x *batchCtx) Value(key any) any {
	if _, ok := key.(probeKey); ok {
		return &x.probe
	}
	return nil
}

package redlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// A failureCause keeps why a node's calls fail, so that a vote counted as
// timed out can say what really went wrong. A call to a master whose port
// is closed fails with "connection refused" only after the redis client's
// dial retries, long after the node timeout: the round has counted it as
// "no answer within the node timeout" by then, and the call's late answer
// is cut short by its batch's deadline (see autopipe) before the retries
// end. So a timed-out vote starts a probe — one dial with the redis
// client's own dialer, bounded by probeTimeout, at most one per node at a
// time and per probeEvery — whose error the node's later timed-out votes
// carry, until the node answers again.
type failureCause struct {
	mu      sync.Mutex
	err     error     // nil once the node answered after it
	probing bool      // a probe is in flight
	probed  time.Time // when the last probe started
}

const (
	probeTimeout = 200 * time.Millisecond
	probeEvery   = time.Second
)

// record notes the outcome of a call to the node: err nil for an answer.
// Context errors say nothing of the node and are not kept.
func (f *failureCause) record(err error) {
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return
	}
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

// explain returns err, node n's vote's error, with the node's known cause
// attached when err is the round's timeout; without a known cause, it
// starts a probe for the next time.
func (c *Client) explain(n int, err error) error {
	if !errors.Is(err, quorum.ErrTimeout) {
		return err
	}
	f := &c.nodes[n].cause
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return &timeoutError{timeout: err, cause: f.err}
	}
	if dial := dialerOf(c.nodes[n].master.Redis()); dial != nil && !f.probing && time.Since(f.probed) >= probeEvery {
		f.probing, f.probed = true, time.Now()
		c.spawn(func() { c.probe(f, dial) })
	}
	return err
}

// probe dials the node once and records why that failed; a dial that
// succeeds clears the cause (the node is slow, not unreachable). Close
// cuts it short.
func (c *Client) probe(f *failureCause, dial func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	go func() { // ends with the probe
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := dial(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probing = false
	if ctx.Err() == nil {
		f.err = err
	}
}

// dialerOf returns a function that opens and closes one connection to
// rdb's server with its own dialer, or nil for a client that is not one
// server's.
func dialerOf(rdb redis.UniversalClient) func(context.Context) error {
	r, ok := rdb.(*redis.Client)
	if !ok || r.Options().Dialer == nil {
		return nil
	}
	opt := r.Options()
	return func(ctx context.Context) error {
		conn, err := opt.Dialer(ctx, opt.Network, opt.Addr)
		if err == nil {
			conn.Close()
		}
		return err
	}
}

// A timeoutError is a vote that timed out on a node whose calls fail for a
// known cause: it matches both (errors.Is).
type timeoutError struct{ timeout, cause error }

func (e *timeoutError) Error() string {
	return e.timeout.Error() + " (the node's calls fail: " + oneLine(e.cause.Error()) + ")"
}
func (e *timeoutError) Unwrap() []error { return []error{e.timeout, e.cause} }

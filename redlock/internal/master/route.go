package master

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/autopipe"
)

// A route is the way to one server — a plain master, or one primary of a
// cluster member (shardroute.go) — its client, the pipe that batches the
// Client's calls to it, and the connections set up in the background.
type route struct {
	rdb       redis.UniversalClient
	dedicated bool          // rdb is the library's dedicated client: predialed, and closed with the Client
	bound     time.Duration // a dedicated route's bound on a call with no deadline (SocketBound)
	pipe      *autopipe.Pipe
	predial   predial
	used      atomic.Int64 // unix nanoseconds of its last call (shard routes)
}

// newRoute returns the route over rdb, dedicated or the caller's, whose calls'
// late outcomes are awaited for late.
func newRoute(rdb redis.UniversalClient, dedicated bool, nodeTimeout, late time.Duration) *route {
	r := &route{rdb: rdb, dedicated: dedicated}
	opts := []autopipe.Option{autopipe.WithLateWindow(late)}
	if dedicated {
		r.bound = SocketBound(nodeTimeout)
		r.predial.budget = 4 * r.bound
		// A batch no longer cut at the socket bound holds up the calls
		// behind it no longer than that bound either: an acquisition does
		// not wait for a patient watchdog batch to a frozen master.
		opts = append(opts, autopipe.WithOverdueAfter(r.bound))
		// A lone call (no other in flight to this server) goes out by
		// Process, on the pipe's own clone (batchClient): fewer
		// allocations than a one-command pipeline.
		opts = append(opts, autopipe.WithLoneProcess())
	}
	r.pipe = autopipe.New(batchClient(rdb, dedicated), opts...)
	return r
}

// batchClient returns the client a route's pipe sends its batches on. For
// the library's dedicated client to one server, that is a clone sharing its
// connections (closed with it) whose reads and writes are cut by the
// batch's context alone: the latest deadline of the batch's calls plus the
// late window (autopipe). The dedicated client's fixed read timeout (SocketBound:
// 1 s at a 250 ms node timeout) would otherwise cut a whole batch of the
// watchdog — whose calls may wait until their most urgent lease's loss
// less a retry — long before any of its calls' deadlines, on a host where
// the process or the master was merely descheduled: every renewal of the
// batch failed, to be sent again and fail again. Every call on a dedicated
// route has a deadline (route.call adds one), so no wait on the node
// outlasts its call's deadline plus the late window. Another client (a
// caller's, or a Ring) is used as it is.
func batchClient(rdb redis.UniversalClient, dedicated bool) redis.UniversalClient {
	if rc, ok := rdb.(*redis.Client); ok && dedicated {
		return rc.WithTimeout(0) // 0: no fixed bound; the context's deadline only
	}
	return rdb
}

// call sends one command through the route's pipe — after ASKING, on the
// same connection, if asking: concurrent calls of the Client to this server
// are written together and their replies read together. It returns when
// the reply arrives or ctx ends; in the latter case it then waits, for late
// at most, for the real outcome, so that a Round's Late sees what the
// server really did — or else the abandoned call's error: outcome unknown,
// undone like a timeout (docs/SAFETY.md, "Late grants"). On a dedicated
// route, a ctx without a deadline gets one: the socket bound.
func (r *route) call(ctx context.Context, late time.Duration, asking bool, args []any) *redis.Cmd {
	if r.dedicated && !r.predial.first.Load() && r.predial.first.CompareAndSwap(false, true) {
		r.predial.start(r.rdb) // the first call dials too: set one up beside it
	}
	if _, ok := ctx.Deadline(); !ok && r.dedicated {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.bound)
		defer cancel()
	}
	var pre []any
	if asking {
		pre = []any{"asking"}
	}
	box := lateBoxes.Get().(*lateBox)
	cmd := r.pipe.DoLateAfter(ctx, box.late, pre, args...)
	// Only an abandoned call has a late outcome coming: one whose real
	// outcome is itself a context error (its batch ran out of time) has not.
	if !errors.Is(cmd.Err(), autopipe.ErrAbandoned) {
		lateBoxes.Put(box) // its late callback is never called
		r.predialAfter(cmd.Err())
		return cmd
	}
	wait := time.NewTimer(late)
	defer wait.Stop()
	select {
	case cmd = <-box.ch:
		lateBoxes.Put(box) // called, and emptied
	case <-wait.C: // box is dropped: its callback may still come
	}
	r.predialAfter(cmd.Err())
	return cmd
}

// A lateBox receives the late outcome of one call at a time (route.call):
// late sends it on ch, which never blocks. Boxes are reused, so that a
// call answered in time costs no channel and no callback of its own.
type lateBox struct {
	ch   chan *redis.Cmd // cap 1
	late func(*redis.Cmd)
}

var lateBoxes = sync.Pool{New: func() any {
	b := &lateBox{ch: make(chan *redis.Cmd, 1)}
	b.late = func(c *redis.Cmd) { b.ch <- c }
	return b
}}

// predialAfter sets up a connection in the background after a call that got
// no answer from the server (see predial).
func (r *route) predialAfter(err error) {
	if err != nil && r.dedicated && !IsReply(err) {
		r.predial.start(r.rdb)
	}
}

// IsReply reports whether err is an error reply of the server (it
// answered), not a failure to reach it.
func IsReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// cut drops every connection of the route's dedicated client at once — a read
// stuck on a frozen server included — and fails every later call. A
// caller's client (not dedicated) is never touched.
func (r *route) cut() {
	if r.dedicated {
		r.rdb.Close()
	}
}

// close closes the route's dedicated client — every call of the Client has ended
// by now: what the pipe may still read is a batch nobody waits for — then
// stops the pipe, and waits for the connection being set up, if any. With
// no batch in flight (no new one can start), the pipe stops first: its
// senders hand the connections they hold back to the client's pool while it
// is still open (go-redis logs a connection handed back to a closed pool).
func (r *route) close() {
	r.predial.stop()
	if r.pipe.Stats().InFlight == 0 {
		r.pipe.Close()
	}
	r.cut()
	r.pipe.Close()
	r.predial.wg.Wait()
}

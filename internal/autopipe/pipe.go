package autopipe

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of a Pipe's options.
const (
	// DefaultMaxInFlight is the number of batches a Pipe keeps in flight at
	// once: one, so that calls arriving during a round trip form the next
	// batch, and batches reach the server in the order they were formed.
	// See the package doc for the measurements behind it.
	DefaultMaxInFlight = 1
	// DefaultIdleTimeout is how long a sending goroutine waits for work
	// before it ends; the next call starts a new one.
	DefaultIdleTimeout = 5 * time.Second
	// DefaultLateWindow is how long after the latest deadline of its calls
	// a batch may still take to be written and read (see WithLateWindow).
	DefaultLateWindow = 250 * time.Millisecond
)

// A Pipe sends the commands of many goroutines to one Redis client in
// batches: while a batch is in flight, new calls collect into the next one;
// when nothing is in flight, a call is sent at once. Every call still ends
// at its own ctx's deadline, whatever the client's timeouts.
//
// A Pipe is safe for concurrent use and must not be copied. It never closes
// the client it was given. Its goroutines end when idle, and all of them
// by the time Close returns.
type Pipe struct {
	rdb         redis.UniversalClient
	maxInFlight int
	maxOverdue  int
	idleTimeout time.Duration
	lateWindow  time.Duration
	// overdueAfter: a batch in flight this long is overdue (0: never).
	overdueAfter time.Duration
	held         bool          // WithHeldConnections
	lone         bool          // WithLoneProcess asked
	loneRdb      *redis.Client // lone calls' client, with setupHook; nil: lone calls go as pipelines

	wake chan struct{} // one token per parked sender promised work; cap maxInFlight
	done chan struct{} // closed by Close

	mu      sync.Mutex
	queue   []*call // calls waiting for the next batch, in arrival order
	senders int     // sending goroutines holding a slot, at most maxInFlight
	parked  int     // senders waiting for work and not yet promised a token
	overdue int     // senders whose overdue batch gave up its slot, at most maxOverdue
	closed  bool

	wg sync.WaitGroup // senders and late callbacks

	calls, batches, sent, skipped, late, overdueBatches atomic.Uint64
	inFlight                                            atomic.Int64
}

// An Option changes a Pipe's settings in New.
type Option func(*Pipe)

// WithMaxInFlight sets how many batches may be in flight to the server at
// once, each on its own pooled connection (default DefaultMaxInFlight).
// With more than one, batches may overtake one another. It panics if n < 1.
func WithMaxInFlight(n int) Option {
	if n < 1 {
		panic("autopipe: WithMaxInFlight needs at least 1")
	}
	return func(p *Pipe) { p.maxInFlight = n }
}

// WithLateWindow sets how long after the latest deadline of its calls a
// batch may still take — to dial, retry, and, where the client applies
// contexts to reads, to read its late replies — when every call of the batch
// has a deadline (default DefaultLateWindow). It panics if d <= 0.
func WithLateWindow(d time.Duration) Option {
	if d <= 0 {
		panic("autopipe: WithLateWindow needs a positive duration")
	}
	return func(p *Pipe) { p.lateWindow = d }
}

// WithHeldConnections has each sender hold one connection from batch to
// batch over a plain *redis.Client that never retries (see lane); by
// default every batch takes its connection from the client's pool, whose
// health check finds a connection the server closed (a restart) before a
// batch is written on it. A held connection finds it only by failing one
// batch, so a master restarted between two batches fails the first call
// after it: the Pipe of a quorum member, whose first vote after a restart
// must say so, leaves it off.
func WithHeldConnections() Option { return func(p *Pipe) { p.held = true } }

// WithIdleTimeout sets how long a sending goroutine waits for work before it
// ends (default DefaultIdleTimeout). It panics if d <= 0.
func WithIdleTimeout(d time.Duration) Option {
	if d <= 0 {
		panic("autopipe: WithIdleTimeout needs a positive duration")
	}
	return func(p *Pipe) { p.idleTimeout = d }
}

// New returns a Pipe over rdb, which may be any go-redis client: a
// ClusterClient or a Ring splits each batch by node itself. New sends
// nothing and starts no goroutine. It panics if rdb is nil.
func New(rdb redis.UniversalClient, opts ...Option) *Pipe {
	if rdb == nil {
		panic("autopipe: New needs a client")
	}
	p := &Pipe{rdb: rdb, maxInFlight: DefaultMaxInFlight, maxOverdue: DefaultMaxOverdue, idleTimeout: DefaultIdleTimeout, lateWindow: DefaultLateWindow, done: make(chan struct{})}
	for _, opt := range opts {
		opt(p)
	}
	p.wake = make(chan struct{}, p.maxInFlight)
	p.loneRdb = loneClient(rdb, p.lone)
	return p
}

// Close stops the Pipe. Commands still queued are not sent: their callers
// get ErrClosed, as does every later Do. Close then waits until the batches
// in flight (overdue ones included) have ended — they are not cut short, so
// that late replies are still read and delivered; each is bounded by the
// client's own timeouts (ReadTimeout, times its retries; with
// ContextTimeoutEnabled, the late window), and closing the client ends them
// at once — and until the late callbacks they started have returned. Every goroutine of the Pipe has ended when Close
// returns. Close may be called more than once; it must not be called from
// a late callback of the same Pipe.
func (p *Pipe) Close() {
	p.mu.Lock()
	first := !p.closed
	var dropped []*call
	if first {
		p.closed = true
		dropped, p.queue = p.queue, nil
		close(p.done)
		// Counted while dropping, so that a late callback started by deliver
		// never makes the group grow from zero under a concurrent Close's Wait.
		p.wg.Add(1)
	}
	p.mu.Unlock()
	if first {
		p.skipped.Add(uint64(len(dropped)))
		for _, c := range dropped {
			c.cmd.SetErr(closedNotSent)
			p.deliver(c)
		}
		p.wg.Done()
	}
	p.wg.Wait()
}

// Stats are a Pipe's counters since New, and its state when read.
type Stats struct {
	Calls    uint64 // commands accepted by Do (not those refused after Close)
	Batches  uint64 // pipelines written, each in one round trip
	Sent     uint64 // commands written in those batches
	Skipped  uint64 // commands not sent: ctx ended before their batch formed, or Close
	Late     uint64 // outcomes that came after their caller had stopped waiting
	Overdue  uint64 // batches that outlived their callers and let the next go past
	Queued   int    // commands waiting for the next batch now
	InFlight int    // batches in flight now
}

// Stats returns the Pipe's counters. Each is read atomically, the set is
// not: under load they may disagree by the calls in progress.
func (p *Pipe) Stats() Stats {
	p.mu.Lock()
	queued := len(p.queue)
	p.mu.Unlock()
	return Stats{
		Calls:    p.calls.Load(),
		Batches:  p.batches.Load(),
		Sent:     p.sent.Load(),
		Skipped:  p.skipped.Load(),
		Late:     p.late.Load(),
		Overdue:  p.overdueBatches.Load(),
		Queued:   queued,
		InFlight: int(p.inFlight.Load()),
	}
}

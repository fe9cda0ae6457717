package redlock

import (
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// A Client acquires locks on a fixed set of independent Redis masters; a
// lock is held when a majority of them (N/2+1) granted it. It is safe for
// concurrent use and must not be copied. It never closes the redis clients
// it was given: it talks through dedicated clients, built by New from the
// given ones' options, and closes those in Close.
type Client struct {
	nodes []*node
	cfg   config
	// durArgs are cfg's durations boxed for the scripts (callargs.go).
	durArgs atomic.Pointer[durationArgs]
	keys    keyCache // names of keys recently locked, boxed (callargs.go)

	wakeups  wakeups
	renewals renewer
	ids      *master.MemberIDs // the members' cluster node IDs (call.go, firstContact)
	terms    sync.Map          // name → the largest term Leader or Observe reported (leaderread.go)

	mu     sync.Mutex
	closed bool
	done   chan struct{}      // closed by Close: waiting Lock calls give up, workers end
	jobs   chan func()        // hands a job to an idle worker
	goFn   func(func())       // spawn, as a function value made once: rounds' Go
	locks  map[*Lock]struct{} // held locks, ended by Close
	wg     sync.WaitGroup     // calls and background work in flight
}

// A node is one master of a Client: the way to it, and what the Client
// keeps of its calls.
type node struct {
	master *master.Node             // calls, and the servers' start state
	cause  failureCause             // why its calls last failed (cause.go)
	saved  atomic.Pointer[savedArg] // the last restart argument, boxed (callargs.go)
}

// New returns a Client over nodes, independent masters; opts set the
// defaults of every lock. It refuses, with an error matching ErrInvalid: no
// nodes, a nil node, the same client or the same address twice, two members
// given a common server (cluster seed lists [a b c] and [b]), and invalid
// options. Sentinel failover clients (redis.NewFailoverClient) share one
// placeholder address, which New does not compare.
//
// New never waits on the nodes. It starts, in the background, reading each
// member's cluster node IDs (a Sentinel member's master IDs): a
// member's replies count only once read, and two members found to reach one
// cluster or master set fail from then on with ErrSameCluster, as does every
// acquisition of the Client. An even number of nodes is accepted with a
// warning through WithLogger's logger: 4 tolerate one failure, as 3 do.
//
// For each node given as a *redis.Client, *redis.ClusterClient or
// *redis.Ring, New builds the client the library talks through from its
// options, with ContextTimeoutEnabled, no retries and bounded dial, read
// and write timeouts, so that every wait on a node is bounded whatever the
// given client's settings; hooks added to the given client do not see the
// library's commands. Any other UniversalClient is used as it is, and its
// own timeouts then bound what the library cannot.
func New(nodes []redis.UniversalClient, opts ...Option) (*Client, error) {
	if len(nodes) == 0 {
		return nil, invalid("no nodes")
	}
	cfg, err := defaults().with(opts)
	if err != nil {
		return nil, err
	}
	cfg.perCall = true
	c := &Client{cfg: cfg, nodes: make([]*node, len(nodes)), locks: map[*Lock]struct{}{}, done: make(chan struct{}), jobs: make(chan func())}
	c.wakeups = wakeups{c: c, waiters: map[string]map[chan struct{}]string{}}
	c.renewals.c = c
	c.goFn = c.spawn
	c.ids = master.NewMemberIDs(len(nodes))
	addrs := make([]string, len(nodes))
	for i, rdb := range nodes {
		if isNil(rdb) {
			return nil, invalid("node %d is nil", i)
		}
		addrs[i] = master.AddrOf(rdb)
		for j := range i {
			if nodes[j] == rdb || (addrs[i] != "" && addrs[j] == addrs[i]) {
				return nil, invalid("nodes %d and %d are the same master (%s): the quorum needs independent masters", j, i, addrs[i])
			}
		}
	}
	if err := master.SharedServer(nodes); err != nil {
		return nil, invalid("%v", err)
	}
	// Only once every node is vetted: a node owns a client to close.
	for i, rdb := range nodes {
		c.nodes[i] = &node{master: master.New(rdb, cfg.nodeTimeout)}
	}
	for n := range c.nodes {
		c.firstContact(n, "") // the reads of the members' IDs start (call.go)
	}
	warnEven(&cfg, len(nodes))
	return c, nil
}

// warnEven logs, through cfg's loggers (WithLogger), that an even number
// of masters buys nothing over one fewer: a majority of 2 is both, a
// majority of 4 tolerates one failure as 3 do. Such a Client is accepted.
func warnEven(cfg *config, n int) {
	if n%2 != 0 {
		return
	}
	cfg.observers.warn("redlock: an even number of masters tolerates no more failures than one fewer; use an odd number",
		slog.Int("nodes", n), slog.Int("majority", quorum.Majority(n)), slog.Int("failures tolerated", n-quorum.Majority(n)))
}

// Close ends every lock still held — its Done closes and its Err becomes
// ErrClosed — without releasing it: the leases expire with their TTL, so
// Unlock them first. It stops renewals, makes waiting calls return
// ErrClosed, drops the subscriptions, and waits for the calls in flight one
// node timeout plus the late window at most; then it drops the connections
// of its dedicated clients, which ends any read stuck on a frozen master, and
// closes them. It never closes the given redis clients (over a client type
// it could not rebuild, calls in flight are bounded only by that client's
// timeouts). It returns nil, and nil again when called again; every other
// call after Close returns ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	held := make([]*Lock, 0, len(c.locks))
	for l := range c.locks {
		held = append(held, l)
	}
	c.mu.Unlock()
	for _, l := range held {
		l.lose(ErrClosed)
	}
	c.settle(c.cfg.nodeTimeout + master.LateWindow(c.cfg.nodeTimeout))
	for _, n := range c.nodes { // last: late releases above went through them
		n.master.Close()
	}
	return nil
}

// settle waits for the calls and background work in flight; if they have
// not ended within grace, it cuts every node's dedicated connections — they then
// fail at once — and waits for the rest.
func (c *Client) settle(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	wait := time.NewTimer(grace)
	defer wait.Stop()
	select {
	case <-done:
		return
	case <-wait.C:
	}
	for _, n := range c.nodes {
		n.master.Cut()
	}
	<-done
}

// begin counts an operation in flight, or reports false if the Client is
// closed. Every begin that returns true is paired with end.
func (c *Client) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

func (c *Client) end() { c.wg.Done() }

// spawn runs f on a goroutine that Close waits for: an idle worker if one
// is waiting, else a new one. Workers outlive their job for a while, so that
// node calls run on stacks already grown to go-redis's needs instead of
// growing a fresh goroutine's each time. It is called only inside a
// begin/end pair, so that the count is never zero when it grows.
func (c *Client) spawn(f func()) {
	select {
	case c.jobs <- f:
	default:
		c.wg.Add(1)
		go c.work(f)
	}
}

// workerIdle is how long a worker waits for another job before it ends.
const workerIdle = 2 * time.Second

func (c *Client) work(f func()) {
	defer c.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-c.jobs:
		case <-idle.C:
			return
		case <-c.done:
			return
		}
	}
}

// track records a held lock for Close, or reports false if c is closed.
func (c *Client) track(l *Lock) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.locks[l] = struct{}{}
	return true
}

func (c *Client) forget(l *Lock) {
	c.mu.Lock()
	delete(c.locks, l)
	c.mu.Unlock()
}

// round returns the fan-out of one operation over c's nodes under cfg: a
// value, which stays on its caller's stack (issue 26).
func round[T any](c *Client, cfg *config) quorum.Round[T] {
	return quorum.Round[T]{Nodes: len(c.nodes), Timeout: cfg.nodeTimeout, Clock: cfg.clock, Go: c.goFn}
}

func isNil(rdb redis.UniversalClient) bool {
	if rdb == nil {
		return true
	}
	v := reflect.ValueOf(rdb)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// isClosed reports whether Close has been called.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

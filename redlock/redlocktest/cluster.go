package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// NodeTimeout is the node timeout of the Clients that Client returns,
// before the caller's options: the masters share the test's CPU, and a
// script call on miniredis under the race detector on a loaded machine can
// take tens of milliseconds. Pass redlock.WithNodeTimeout to Client to
// test with another (it must stay below the TTL less the drift).
const NodeTimeout = 150 * time.Millisecond

// vouchTimeout bounds vouching for each new master.
const vouchTimeout = 5 * time.Second

// A Cluster is a set of independent in-process masters, each at a fixed
// loopback address for its whole life, and one go-redis client per master.
// Its methods are safe for concurrent use. A Cluster must not be copied.
type Cluster struct {
	masters []*master
	clients []redis.UniversalClient
	report  func(error) // where a fault that could not be made goes

	mu     sync.Mutex
	errs   []error // reported, for Close (New's Clusters)
	closed bool
}

// Start starts n fresh masters, vouched for so that they count at once,
// and stops them and their clients when t ends. It fails t if n < 1 or a
// master cannot start. A fault that cannot be made later (Restart finding
// its address taken, an index out of range) fails t with Errorf.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := start(n, func(err error) { t.Errorf("%v", err) })
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return c
}

// New is Start outside a test — a demo, a program's main: the caller stops
// the masters with Close, which also returns any fault that could not be
// made meanwhile.
func New(n int) (*Cluster, error) { return start(n, nil) }

// start starts n masters; report gets the faults that cannot be made, or
// they are kept for Close if it is nil.
func start(n int, report func(error)) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("redlocktest: %d masters; want at least 1", n)
	}
	c := &Cluster{report: report}
	if report == nil {
		c.report = c.keep
	}
	for range n {
		m, err := startMaster("127.0.0.1:0")
		if err != nil {
			c.Close()
			return nil, err
		}
		c.masters = append(c.masters, m)
		c.clients = append(c.clients, redis.NewClient(clientOptions(m.addr)))
	}
	if err := c.vouch(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// clientOptions are the options of the clients of Clients: go-redis's
// defaults, but for calls that end with their context (a test's deadline
// holds on a frozen master, instead of go-redis's 3 s read timeout and its
// retries), a dial that fails at once when a master is killed (the quorum
// copes with a dead master, not the pool's redials) and no handshake
// commands miniredis does not know.
func clientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                     addr,
		ContextTimeoutEnabled:    true,
		DialerRetries:            1,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// vouch calls redlock.TrustStart on every master in parallel, as an operator
// does for a new deployment, so that the masters count at once.
func (c *Cluster) vouch() error {
	ctx, cancel := context.WithTimeout(context.Background(), vouchTimeout)
	defer cancel()
	errs := make([]error, len(c.clients))
	var wg sync.WaitGroup
	for i, node := range c.clients {
		wg.Go(func() { errs[i] = redlock.TrustStart(ctx, node) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Clients returns one go-redis client per master, in order, for redlock.New
// or for inspecting the masters. Their calls end with their context
// (ContextTimeoutEnabled), so a test's deadline holds on a frozen master.
// They are closed when the Cluster stops; do not close them.
func (c *Cluster) Clients() []redis.UniversalClient {
	return append([]redis.UniversalClient(nil), c.clients...)
}

// Addrs returns the masters' addresses, in order, for clients of the
// caller's own making. An address stays its master's across Kill and
// Restart.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.masters))
	for i, m := range c.masters {
		addrs[i] = m.addr
	}
	return addrs
}

// Client returns redlock.New over Clients(), with a node timeout of
// NodeTimeout and then opts, and closes it when t ends — after thawing
// every frozen master: a waiter's subscription to a frozen master would
// otherwise hold Close for seconds (go-redis subscribes under a lock that
// Close of the subscription waits for). It fails t if New refuses the
// options.
func (c *Cluster) Client(t testing.TB, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	locks, err := redlock.New(c.Clients(), append([]redlock.Option{redlock.WithNodeTimeout(NodeTimeout)}, opts...)...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		for i := range c.masters {
			c.Thaw(i)
		}
		locks.Close()
	})
	return locks
}

// Close stops every master and closes the clients of Clients. It returns the
// faults that could not be made (New's Clusters; Start's report them to the
// test). Calls after the first do nothing.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	for _, node := range c.clients {
		node.Close()
	}
	for _, m := range c.masters {
		m.stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.errs...)
}

func (c *Cluster) keep(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

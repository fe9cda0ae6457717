package redislab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/redis/go-redis/v9"
)

// Launch starts n local redis-server processes outside a test — for the
// runnable examples, which have no testing.TB — and returns their lab and a
// stop function that kills them and removes their data dirs. Unlike Start
// it neither skips nor fails: it returns an error when redis-server is
// missing or a node does not start (stopping those that did). REDLOCK_ADDRS
// is not used, and the nodes are Controllable.
func Launch(n int, opts ...Option) (*Lab, func(), error) {
	if n < 1 {
		return nil, nil, fmt.Errorf("redislab: Launch needs at least one node, got %d", n)
	}
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil, fmt.Errorf("redislab: no redis-server on PATH: %w", err)
	}
	base, err := os.MkdirTemp("", "redislab-")
	if err != nil {
		return nil, nil, err
	}
	locals := newLocals(base, bin, n, &cfg)
	stop := func() {
		for _, l := range locals {
			_ = l.kill() // best effort: an example has no test to fail
		}
		_ = os.RemoveAll(base)
	}
	if err := errors.Join(startLocals(locals)...); err != nil {
		stop()
		return nil, nil, err
	}
	lab := &Lab{Nodes: make([]*Node, n)}
	for i, l := range locals {
		lab.Nodes[i] = &Node{addr: l.addr(), local: l}
	}
	return lab, stop, nil
}

// LaunchClients is Launch with a go-redis client per node, each vouched
// for with trust (redlock.TrustStart: the masters are brand new), for an
// example that needs nothing else of the lab. stop closes the clients, then
// stops the nodes. It panics if a node does not start or trust fails: an
// example has no test to fail.
func LaunchClients(n int, trust func(context.Context, redis.UniversalClient) error) (clients []redis.UniversalClient, stop func()) {
	lab, stopLab, err := Launch(n)
	if err != nil {
		panic(err)
	}
	stop = func() {
		for _, c := range clients {
			_ = c.Close()
		}
		stopLab()
	}
	for _, addr := range lab.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		clients = append(clients, c)
		if err := trust(context.Background(), c); err != nil {
			stop()
			panic(err)
		}
	}
	return clients, stop
}

// SkipExamplesWithoutServer makes the test binary skip its examples (as
// -skip '^Example' would) when no redis-server is on PATH, unless CI=true:
// the examples run against real masters (Launch) and, having no
// testing.TB, cannot skip themselves as the tests do. In CI a missing
// server is a failure, so they run and fail. Call it from TestMain, before
// m.Run.
func SkipExamplesWithoutServer() {
	if _, err := exec.LookPath("redis-server"); err == nil || os.Getenv(envCI) == "true" {
		return
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	skip := "^Example"
	if f := flag.Lookup("test.skip"); f != nil {
		if old := f.Value.String(); old != "" {
			skip = old + "|" + skip
		}
		_ = flag.Set("test.skip", skip)
		fmt.Fprintln(os.Stderr, "redislab: no redis-server on PATH: examples skipped")
	}
}

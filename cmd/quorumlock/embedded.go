package main

import (
	"fmt"
	"sync"

	"github.com/alicebob/miniredis/v2"
)

// An embedded is a set of in-process Redis-compatible servers (miniredis)
// on loopback ports, which the demo can kill and restart. Its methods are
// safe for concurrent use.
type embedded struct {
	mu    sync.Mutex
	addrs []string
	nodes []*miniredis.Miniredis // nil while killed
}

// startEmbedded starts n servers on free loopback ports.
func startEmbedded(n int) (*embedded, error) {
	e := &embedded{addrs: make([]string, n), nodes: make([]*miniredis.Miniredis, n)}
	for i := range n {
		m, err := startMini("127.0.0.1:0")
		if err != nil {
			e.close()
			return nil, err
		}
		e.nodes[i], e.addrs[i] = m, m.Addr()
	}
	return e, nil
}

// startMini starts one server on addr. Its TTLs run on the real clock, as a
// Redis server's do; by default miniredis moves them only on FastForward,
// and a lease would never expire.
func startMini(addr string) (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		return nil, fmt.Errorf("embedded node on %s: %w", addr, err)
	}
	m.ClockTTL(true)
	return m, nil
}

// kill stops node i as a crash does: its listener and every connection
// close, and its data is gone.
func (e *embedded) kill(i int) {
	e.mu.Lock()
	m := e.nodes[i]
	e.nodes[i] = nil
	e.mu.Unlock()
	if m != nil {
		m.Close()
	}
}

// restart starts node i again, empty, on the same address: a Redis server
// restarted without persistence. It kills the node first if it runs.
func (e *embedded) restart(i int) error {
	e.kill(i)
	m, err := startMini(e.addrs[i])
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.nodes[i] = m
	return nil
}

func (e *embedded) close() {
	for i := range e.nodes {
		e.kill(i)
	}
}

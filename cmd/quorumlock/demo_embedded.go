package main

import (
	"context"
	"fmt"

	"github.com/seed818c56a1/quorumlock/redlock/redlocktest"
)

// An embedded is the demo's in-process nodes: a redlocktest Cluster, whose
// masters answer what restart detection reads (run_id, uptime, LASTSAVE), so
// that the demo runs with the restart guard on, as a deployment does. Its
// methods are safe for concurrent use.
type embedded struct {
	cluster *redlocktest.Cluster
	addrs   []string
}

// startEmbedded starts n nodes on free loopback ports, vouched for as a new
// deployment's masters are.
func startEmbedded(n int) (*embedded, error) {
	c, err := redlocktest.New(n)
	if err != nil {
		return nil, fmt.Errorf("embedded nodes: %w", err)
	}
	return &embedded{cluster: c, addrs: c.Addrs()}, nil
}

// kill stops node i as a crash does: its listener and every connection
// close, and its data is gone.
func (e *embedded) kill(i int) { e.cluster.Kill(i) }

// restart starts node i again, empty, on the same address, as a new process:
// a Redis server restarted without persistence, which sits out the restart
// guard. It kills the node first if it runs, and reports whether it answers.
func (e *embedded) restart(i int) error {
	e.cluster.Restart(i)
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	if err := e.cluster.Clients()[i].Ping(ctx).Err(); err != nil {
		return fmt.Errorf("embedded node on %s: %w", e.addrs[i], err)
	}
	return nil
}

func (e *embedded) close() { e.cluster.Close() }

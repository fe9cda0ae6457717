package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/autopipe"
)

// A node is one master of a Client, with what the Client learnt of it.
type node struct {
	rdb     redis.UniversalClient
	pipe    *autopipe.Pipe // batches the Client's concurrent calls to this node
	addr    string         // "" when the client type exposes none
	cluster bool           // a Redis Cluster: one script touches one hash slot

	master atomic.Bool  // ROLE confirmed a master (or the node is a cluster)
	cause  failureCause // why its calls last failed (cause.go)

	mu      sync.Mutex
	runID   string    // of the process last seen in a grant; "" before the first
	saved   string    // the node's LASTSAVE as last seen, once it can be relied on; else ""
	started time.Time // when that process started, on the Client's clock; zero if vouched
}

func newNode(rdb redis.UniversalClient) *node {
	_, cluster := rdb.(*redis.ClusterClient)
	n := &node{rdb: rdb, pipe: autopipe.New(rdb), addr: addrOf(rdb), cluster: cluster}
	// A cluster client is a whole cluster, not one server: its own failover
	// decides which of its servers is a master.
	n.master.Store(cluster)
	return n
}

// vet checks, at the Client's first contact with the node, that it is a
// master: a replica given beside its master would be a second vote from one
// data set. Until ROLE has answered once, every acquisition asks again. With
// restart detection on, this is not needed: the grant that reports the
// node's start reports its role too (restart.go), at first contact and after
// every restart.
func (n *node) vet(ctx context.Context) error {
	if n.master.Load() {
		return nil
	}
	role, err := n.rdb.Do(ctx, "ROLE").Slice()
	if err != nil && redis.HasErrorPrefix(err, "unknown command") {
		// A server without ROLE (an embedded test server) has no replicas.
		n.master.Store(true)
		return nil
	}
	if err != nil {
		return fmt.Errorf("redlock: ROLE (to check that the node is a master): %w", err)
	}
	if len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("%w: ROLE says %v", ErrReplica, role)
	}
	n.master.Store(true)
	return nil
}

// do sends one command through the node's pipe: concurrent calls of the
// Client to this node are written together and their replies read together.
// It returns when the reply arrives or ctx ends; in the latter case it then
// waits for the real outcome (bounded by the redis client's own timeouts),
// so that a Round's Late sees what the node really did.
func (n *node) do(ctx context.Context, args ...any) *redis.Cmd {
	late := make(chan *redis.Cmd, 1)
	cmd := n.pipe.DoLate(ctx, func(c *redis.Cmd) { late <- c }, args...)
	// Only an abandoned call has a late outcome coming: one whose real
	// outcome is itself a context error (its batch ran out of time) has not.
	if errors.Is(cmd.Err(), autopipe.ErrAbandoned) {
		return <-late
	}
	return cmd
}

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
	rdb     redis.UniversalClient // the client calls go through: own, else the caller's
	own     bool                  // rdb is the library's own (ownClient), closed with the Client
	late    time.Duration         // the late window: how long past its ctx a call's outcome is awaited
	pipe    *autopipe.Pipe        // batches the Client's concurrent calls to this node
	warmth  warmth                // connections set up in the background (own only)
	addr    string                // "" when the client type exposes none
	cluster bool                  // a Redis Cluster: one script touches one hash slot

	master atomic.Bool  // ROLE confirmed a master (or the node is a cluster)
	cause  failureCause // why its calls last failed (cause.go)

	mu     sync.Mutex
	starts map[string]*startState // per answering server (starts.go): its node ID, "" on a plain master
}

// newNode returns the node of the caller's client given, whose calls go
// through a client of the library's own where given's type allows
// (ownClient), under nodeTimeout by default.
func newNode(given redis.UniversalClient, nodeTimeout time.Duration) *node {
	_, cluster := given.(*redis.ClusterClient)
	n := &node{rdb: given, late: lateWindow(nodeTimeout), addr: addrOf(given), cluster: cluster}
	if own := ownClient(given, socketBound(nodeTimeout)); own != nil {
		n.rdb, n.own = own, true
		n.warmth.budget = 4 * socketBound(nodeTimeout)
	}
	n.pipe = autopipe.New(n.rdb, autopipe.WithLateWindow(n.late))
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
// waits, for the node's late window at most, for the real outcome, so that a
// Round's Late sees what the node really did — or else the abandoned call's
// error: outcome unknown, undone like a timeout (see the package doc on
// late grants).
func (n *node) do(ctx context.Context, args ...any) *redis.Cmd {
	if n.own && !n.warmth.first.Load() && n.warmth.first.CompareAndSwap(false, true) {
		n.warmth.start(n.rdb) // the first call dials too: set one up beside it
	}
	late := make(chan *redis.Cmd, 1) // never blocks the pipe's late callback
	cmd := n.pipe.DoLate(ctx, func(c *redis.Cmd) { late <- c }, args...)
	// Only an abandoned call has a late outcome coming: one whose real
	// outcome is itself a context error (its batch ran out of time) has not.
	if !errors.Is(cmd.Err(), autopipe.ErrAbandoned) {
		n.warmAfter(cmd.Err())
		return cmd
	}
	wait := time.NewTimer(n.late)
	defer wait.Stop()
	select {
	case cmd = <-late:
	case <-wait.C:
	}
	n.warmAfter(cmd.Err())
	return cmd
}

// warmAfter sets up a connection in the background after a call that got
// no answer from the node (see warmth).
func (n *node) warmAfter(err error) {
	var reply redis.Error
	if err != nil && n.own && !errors.As(err, &reply) {
		n.warmth.start(n.rdb)
	}
}

// cut drops every connection of the node's own client at once — a read
// stuck on a frozen master included — and fails every later call: Close's
// last resort. A caller's client (not own) is never touched.
func (n *node) cut() {
	if n.own {
		n.rdb.Close()
	}
}

// close closes the node's own client — every call of the Client has ended
// by now: what the pipe may still read is a batch nobody waits for — then
// stops the pipe, and waits for the connection being set up, if any.
func (n *node) close() {
	n.warmth.stop()
	n.cut()
	n.pipe.Close()
	n.warmth.wg.Wait()
}

package redlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A node is one master of a Client, with what the Client learnt of it.
type node struct {
	rdb     redis.UniversalClient // the client calls go through: own, else the caller's
	own     bool                  // rdb is the library's own (ownClient), closed with the Client
	late    time.Duration         // the late window: how long past its ctx a call's outcome is awaited
	main    *route                // a plain master's one route (nil on a cluster)
	shards  *shardRoutes          // a cluster's: one route per primary (nil on a plain master)
	addr    string                // "" when the client type exposes none (name says what votes show)
	dialed  *dialedAddr           // a Sentinel member's last dialed master (nil on others)
	cluster bool                  // a Redis Cluster: one script touches one hash slot
	// failover: a Sentinel failover client, whose master may be a promoted
	// replica: its scripts read the master's owner record (startKeys).
	failover bool

	master atomic.Bool  // ROLE confirmed a master (or the node is a cluster)
	cause  failureCause // why its calls last failed (cause.go)

	saved atomic.Pointer[savedArg] // the last restart argument, boxed (callargs.go)

	mu     sync.Mutex
	starts map[string]*startState // per answering server (starts.go): its node ID, "" on a plain master
}

// newNode returns the node of the caller's client given, whose calls go
// through a client of the library's own where given's type allows
// (ownClient), under nodeTimeout by default.
func newNode(given redis.UniversalClient, nodeTimeout time.Duration) *node {
	_, cluster := given.(*redis.ClusterClient)
	n := &node{rdb: given, late: lateWindow(nodeTimeout), addr: addrOf(given), cluster: cluster, failover: isFailover(given)}
	if n.failover {
		n.dialed = new(dialedAddr)
	}
	if own := ownClient(given, socketBound(nodeTimeout), n.dialed); own != nil {
		n.rdb, n.own = own, true
	}
	if cc, ok := n.rdb.(*redis.ClusterClient); ok && n.own {
		// Calls grouped per shard: one route per primary (shardroute.go).
		n.shards = newShardRoutes(cc, nodeTimeout)
	} else {
		n.main = newRoute(n.rdb, n.own, nodeTimeout, n.late)
	}
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
func (nd *node) vet(ctx context.Context) error {
	if nd.master.Load() {
		return nil
	}
	role, err := nd.rdb.Do(ctx, "ROLE").Slice()
	if err != nil && redis.HasErrorPrefix(err, "unknown command") {
		// A server without ROLE (an embedded test server) has no replicas.
		nd.master.Store(true)
		return nil
	}
	if err != nil {
		return fmt.Errorf("redlock: ROLE (to check that the node is a master): %w", err)
	}
	if len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("%w: ROLE says %v", ErrReplica, role)
	}
	nd.master.Store(true)
	return nil
}

// call sends one script call (args as for EVALSHA or EVAL) to the node: to
// its one route on a plain master, else to the route of the primary owning
// the call's keys (shardroute.go). See route.call for when it returns.
func (nd *node) call(ctx context.Context, args ...any) *redis.Cmd {
	if nd.shards != nil {
		return nd.shards.call(ctx, nd.late, args)
	}
	return nd.main.call(ctx, nd.late, false, args)
}

// cut drops every connection of the node's own clients at once — a read
// stuck on a frozen master included — and fails every later call: Close's
// last resort. A caller's client (not own) is never touched.
func (nd *node) cut() {
	if nd.shards != nil {
		nd.shards.cut()
		nd.rdb.Close()
		return
	}
	nd.main.cut()
}

// close closes the node's own clients — every call of the Client has ended
// by now: what a pipe may still read is a batch nobody waits for — then
// stops the pipes, and waits for the connections being set up, if any.
func (nd *node) close() {
	if nd.shards != nil {
		nd.shards.close()
		nd.rdb.Close()
		return
	}
	nd.main.close()
}

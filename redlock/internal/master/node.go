package master

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Node is one master of a Client — a plain master, a Redis Cluster, a
// Sentinel master set — and the way to it. Call sends a script to the
// server owning its keys' hash slot; StartKeys, LastSaved and Learn read
// and file what the replies say of that server's start. A Node is safe for
// concurrent use.
type Node struct {
	rdb       redis.UniversalClient // the client calls go through: dedicated, else the caller's
	dedicated bool                  // rdb is the library's dedicated client (dedicatedClient), closed with the Node
	late      time.Duration         // the late window: how long past its ctx a call's outcome is awaited
	main      *route                // a plain master's one route (nil on a cluster)
	shards    *shardRoutes          // a cluster's: one route per primary (nil on a plain master)
	addr      string                // "" when the client type exposes none (Name says what votes show)
	dialed    *dialedAddr           // a Sentinel member's last dialed master (nil on others)
	cluster   bool                  // a Redis Cluster: one script touches one hash slot
	// failover: a Sentinel failover client, whose master may be a promoted
	// replica: its scripts read the master's owner record (StartKeys).
	failover bool

	isMaster atomic.Bool // ROLE confirmed a master (or the node is a cluster)

	mu     sync.Mutex
	starts map[string]*StartState // per answering server (starts.go): its node ID, "" on a plain master
}

// New returns the node of the caller's client given, whose calls go
// through a dedicated client of the library's where given's type allows
// (dedicatedClient), under nodeTimeout by default.
func New(given redis.UniversalClient, nodeTimeout time.Duration) *Node {
	_, cluster := given.(*redis.ClusterClient)
	n := &Node{rdb: given, late: LateWindow(nodeTimeout), addr: AddrOf(given), cluster: cluster, failover: IsFailover(given)}
	if n.failover {
		n.dialed = new(dialedAddr)
	}
	if ded := dedicatedClient(given, SocketBound(nodeTimeout), n.dialed); ded != nil {
		n.rdb, n.dedicated = ded, true
	}
	if cc, ok := n.rdb.(*redis.ClusterClient); ok && n.dedicated {
		// Calls grouped per shard: one route per primary (shardroute.go).
		n.shards = newShardRoutes(cc, nodeTimeout)
	} else {
		n.main = newRoute(n.rdb, n.dedicated, nodeTimeout, n.late)
	}
	// A cluster client is a whole cluster, not one server: its own failover
	// decides which of its servers is a master.
	n.isMaster.Store(cluster)
	return n
}

// Redis returns the client the node's calls go through: the dedicated
// one, else the caller's.
func (nd *Node) Redis() redis.UniversalClient { return nd.rdb }

// Cluster reports whether the node is a Redis Cluster: one script touches
// one hash slot.
func (nd *Node) Cluster() bool { return nd.cluster }

// Failover reports whether the node is a Sentinel failover client.
func (nd *Node) Failover() bool { return nd.failover }

// Name is what votes and errors call the node (NodeVote.Addr): its
// address, a Sentinel member's "sentinel master" and the master's address
// its client last dialed (AddrOf gives none: its master moves), or "" for
// a client of the caller's own type.
func (nd *Node) Name() string {
	if nd.dialed != nil {
		return nd.dialed.sentinelName()
	}
	return nd.addr
}

// ShardAddr returns the address of the primary owning key's slot in a
// cluster node's slot map ("" if the map cannot be loaded within timeout),
// and false on a node whose calls are not routed per shard.
func (nd *Node) ShardAddr(key string, timeout time.Duration) (string, bool) {
	if nd.shards == nil {
		return "", false
	}
	return nd.shards.primaryAddr(key, timeout), true
}

// Vet checks, at the Client's first contact with the node, that it is a
// master: a replica given beside its master would be a second vote from one
// data set. Until ROLE has answered once, every acquisition asks again. With
// restart detection on, this is not needed: the grant that reports the
// node's start reports its role too (restart.go), at first contact and after
// every restart.
func (nd *Node) Vet(ctx context.Context) error {
	if nd.isMaster.Load() {
		return nil
	}
	role, err := nd.rdb.Do(ctx, "ROLE").Slice()
	if err != nil && redis.HasErrorPrefix(err, "unknown command") {
		// A server without ROLE (an embedded test server) has no replicas.
		nd.isMaster.Store(true)
		return nil
	}
	if err != nil {
		return fmt.Errorf("redlock: ROLE (to check that the node is a master): %w", err)
	}
	if len(role) == 0 || role[0] != "master" {
		return fmt.Errorf("%w: ROLE says %v", ErrReplica, role)
	}
	nd.isMaster.Store(true)
	return nil
}

// Call sends one script call (args as for EVALSHA or EVAL) to the node: to
// its one route on a plain master, else to the route of the primary owning
// the call's keys (shardroute.go). See route.call for when it returns.
func (nd *Node) Call(ctx context.Context, args ...any) *redis.Cmd {
	if nd.shards != nil {
		return nd.shards.call(ctx, nd.late, args)
	}
	return nd.main.call(ctx, nd.late, false, args)
}

// Cut drops every connection of the node's dedicated clients at once — a read
// stuck on a frozen master included — and fails every later call: Close's
// last resort. A caller's client (not dedicated) is never touched.
func (nd *Node) Cut() {
	if nd.shards != nil {
		nd.shards.cut()
		nd.rdb.Close()
		return
	}
	nd.main.cut()
}

// Close closes the node's dedicated clients — every call of the Client has ended
// by now: what a pipe may still read is a batch nobody waits for — then
// stops the pipes, and waits for the connections being set up, if any.
func (nd *Node) Close() {
	if nd.shards != nil {
		nd.shards.close()
		nd.rdb.Close()
		return
	}
	nd.main.close()
}

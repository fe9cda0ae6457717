package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/seed818c56a1/quorumlock/quorum"
)

// Client settings for every node. The library bounds each lock call by its
// own node timeout whatever these say; they bound dialing and the calls
// quorumlock makes itself.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 2 * time.Second
	// warmTimeout bounds the PING that opens each node's connection before
	// the first lock attempt, so that dialing and the handshake do not eat
	// the first attempt's node timeout.
	warmTimeout = time.Second
)

// errBadNode is matched by dial's error for an address it cannot parse.
var errBadNode = errors.New("bad node address")

// A nodeSet is one redis client per node address, in order.
type nodeSet struct {
	addrs   []string
	clients []*redis.Client
}

// dial returns clients for addrs (host:port or redis:// URLs). It connects
// to nothing yet; an unparsable URL is an error.
func dial(addrs []string) (*nodeSet, error) {
	ns := &nodeSet{addrs: addrs}
	for _, a := range addrs {
		opt, err := nodeOptions(a)
		if err != nil {
			ns.close()
			return nil, fmt.Errorf("%w %q: %s", errBadNode, redactAddr(a), redactAll(err.Error(), []string{a}))
		}
		ns.clients = append(ns.clients, redis.NewClient(opt))
	}
	return ns, nil
}

func nodeOptions(addr string) (*redis.Options, error) {
	opt := &redis.Options{Addr: addr}
	if strings.Contains(addr, "://") {
		var err error
		if opt, err = redis.ParseURL(addr); err != nil {
			return nil, err
		}
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = dialTimeout, ioTimeout, ioTimeout
	// A refused dial fails at once: the quorum, not the pool, copes with a
	// dead node (go-redis would retry five times, 100 ms apart).
	opt.DialerRetries = 1
	opt.ContextTimeoutEnabled = true
	// One round trip less per new connection: no maintenance push
	// notifications (a Redis Enterprise feature), no CLIENT SETINFO.
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.DisableIdentity = true
	return opt, nil
}

// universal returns the clients as the library takes them.
func (ns *nodeSet) universal() []redis.UniversalClient {
	out := make([]redis.UniversalClient, len(ns.clients))
	for i, c := range ns.clients {
		out[i] = c
	}
	return out
}

// reachable pings every node in parallel, each under warmTimeout, and
// returns how many answered.
func (ns *nodeSet) reachable(ctx context.Context) int {
	var wg sync.WaitGroup
	var n atomic.Int64
	for _, c := range ns.clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, warmTimeout)
			defer cancel()
			if c.Ping(ctx).Err() == nil {
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return int(n.Load())
}

// pings pings every node in parallel, each under timeout, and returns
// each one's error.
func (ns *nodeSet) pings(ctx context.Context, timeout time.Duration) []error {
	errs := make([]error, len(ns.clients))
	var wg sync.WaitGroup
	for i, c := range ns.clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			errs[i] = c.Ping(ctx).Err()
		})
	}
	wg.Wait()
	return errs
}

// warm opens one connection to every node in parallel, each under
// warmTimeout, so that dialing does not eat the first attempt's node
// timeout. It returns once every node answered, or a majority did, or
// bound passed, whichever comes first: a hung node must not delay the lock.
// Failures are ignored: the lock's quorum decides.
func (ns *nodeSet) warm(ctx context.Context, bound time.Duration) {
	answered := make(chan struct{}, len(ns.clients))
	for _, c := range ns.clients {
		go func() {
			ctx, cancel := context.WithTimeout(ctx, warmTimeout)
			defer cancel()
			c.Ping(ctx)
			answered <- struct{}{}
		}()
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	for range quorum.Majority(len(ns.clients)) {
		select {
		case <-answered:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (ns *nodeSet) close() {
	for _, c := range ns.clients {
		c.Close()
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// A node given by address may be one node of a Redis Cluster (INFO server
// says redis_mode:cluster): run and trust then talk to the cluster through
// a ClusterClient seeded with that address (members) — run locks on it as
// one master, trust vouches for every primary of it; status leaves it to
// redlock.Inspect, which reads the key on its slot's primary.

// clusterOf returns a ClusterClient seeded with rdb's node, with rdb's
// credentials, TLS and timeouts. The caller closes it.
func clusterOf(rdb *redis.Client) *redis.ClusterClient {
	o := rdb.Options()
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{o.Addr}, Dialer: o.Dialer, TLSConfig: o.TLSConfig,
		Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider, Protocol: o.Protocol,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, DialerRetries: o.DialerRetries,
		MaintNotificationsConfig: o.MaintNotificationsConfig, DisableIdentity: o.DisableIdentity,
	})
}

// members returns, per node of ns, the client trust vouches through: a
// ClusterClient for a node in cluster mode, else the node's own client. A
// node that does not answer INFO under timeout keeps its own client (the
// vouch then reports why). close closes the ClusterClients.
func (ns *nodeSet) members(timeout time.Duration) (members []redis.UniversalClient, close func()) {
	members = make([]redis.UniversalClient, len(ns.clients))
	var wg sync.WaitGroup
	for i, c := range ns.clients {
		members[i] = c
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if c.InfoMap(ctx, "server").Item("Server", "redis_mode") == "cluster" {
				members[i] = clusterOf(c)
			}
		})
	}
	wg.Wait()
	return members, func() {
		for _, m := range members {
			if cc, ok := m.(*redis.ClusterClient); ok {
				cc.Close()
			}
		}
	}
}

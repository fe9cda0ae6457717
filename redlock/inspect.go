package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// An Inspection is what each node holds for one key: its lock, its readers,
// and the semaphore of the same name. Inspect returns it.
type Inspection struct {
	Key      string
	Names    KeyNames   // the key's names on the nodes
	LimitKey string     // the record of the limit of the semaphore of the name (LimitKey)
	QueueKey string     // the waiters' line of that semaphore (PermitKeys' Queue)
	Permits  []KeyNames // the names of the permits read, one per permit below the limit asked for
	Nodes    []NodeInspection
}

// A NodeInspection is what one node said of an Inspection's key. When Err
// is set the node did not answer and the rest is zero, but Cluster.
type NodeInspection struct {
	Err error
	// Cluster: the node is a Redis Cluster node (a ClusterClient, or a
	// server that says redis_mode:cluster), read on Primary, the address
	// of the primary that serves the key's slot ("" if none was found).
	Cluster bool
	Primary string

	// Start is the server's start, as ViewRestartGuard takes it: INFO
	// server's uptime and whether TrustStart vouched for the process (on
	// a cluster, for the key's slot: TrustKeyFor). RunID is INFO's run_id;
	// StartErr says why Start is not Known (the rest is read all the same).
	Start    MasterStart
	RunID    string
	StartErr error
	// Record is the longest TTL record of the locks read (the key's, and
	// every permit's): 0 when none is held, MaxRestartGuard for one held
	// without a record. ViewRestartGuard takes the largest over the nodes.
	Record time.Duration

	Writer  HoldState   // the key's lock
	Readers []string    // the readers' members whose lease has not ended on the node's clock
	Limit   int         // the limit the semaphore's holders were granted with here; 0: none recorded
	Waiters int64       // the semaphore's waiters in line here, live or whose lease ended since the last attempt
	Permits []HoldState // one per permit asked for
}

// A HoldState is what one node holds for one lock: a key's writer, or a
// permit of a semaphore.
type HoldState struct {
	Owner string        // the holder's owner value (WithOwner); "" when free
	Holds int           // the owner's holds: one per Lock, more when nested
	TTL   time.Duration // the lease left (PTTL), when held
	Fence int64         // the fencing counter: the last token the node issued; 0 when it has none
}

// Inspect reads, read-only, what every node holds for key under the
// prefix of opts (WithPrefix; the other options are checked and have no
// effect): the lock's holder, its readers, the semaphore of the same name
// (its recorded limit and waiters, and with limit > 0 permits 0 to
// limit-1), the fencing counters, and each server's start with the locks'
// TTL records, which ViewRestartGuard takes.
//
// Each node is read in one pipeline, all in parallel (a cluster node once
// more, on the primary that serves the key's slot), and Inspect returns
// once every node answered or failed. A node that cannot answer —
// unreachable, an error reply, ctx ended (at once with go-redis's
// ContextTimeoutEnabled, else when its read timeout cuts the read) — has
// its NodeInspection's Err, and the others are read all the same; a
// node that will not say when it started (INFO refused) has StartErr and
// the rest. Inspect returns an error only for bad input: no nodes, a nil
// node, an empty or too long key, a bad prefix or option, a limit outside
// [0, MaxLimit]: ErrInvalid, with nothing sent.
func Inspect(ctx context.Context, nodes []redis.UniversalClient, key string, limit int, opts ...Option) (Inspection, error) {
	cfg, err := defaults().with(opts)
	if err != nil {
		return Inspection{}, err
	}
	if err := checkInspect(nodes, key, limit); err != nil {
		return Inspection{}, err
	}
	in := Inspection{Key: key, Names: Keys(cfg.prefix, key), LimitKey: LimitKey(cfg.prefix, key),
		QueueKey: PermitKeys(cfg.prefix, key, 0).Queue, Permits: make([]KeyNames, limit),
		Nodes: make([]NodeInspection, len(nodes))}
	for i := range in.Permits {
		in.Permits[i] = PermitKeys(cfg.prefix, key, i)
	}
	var wg sync.WaitGroup
	for i, nd := range nodes {
		wg.Go(func() { in.Nodes[i] = in.node(ctx, nd) })
	}
	wg.Wait()
	return in, nil
}

// checkInspect refuses what Inspect cannot read.
func checkInspect(nodes []redis.UniversalClient, key string, limit int) error {
	if len(nodes) == 0 {
		return invalid("Inspect: no nodes")
	}
	for i, nd := range nodes {
		if nd == nil {
			return invalid("Inspect: node %d is nil", i)
		}
	}
	if limit != 0 {
		if err := checkLimit(limit); err != nil {
			return err
		}
	}
	return checkKey(key)
}

// node reads one node: a plain master where it is, a cluster node on the
// primary that serves the key's slot.
func (in *Inspection) node(ctx context.Context, nd redis.UniversalClient) NodeInspection {
	if cc, ok := nd.(*redis.ClusterClient); ok {
		return in.onCluster(ctx, cc)
	}
	ni, cluster := in.read(ctx, nd, TrustKey)
	if !cluster {
		return ni
	}
	c, ok := nd.(*redis.Client)
	if !ok {
		return NodeInspection{Cluster: true, Err: errors.New("a cluster node behind a client that cannot be asked for its slots")}
	}
	cc := clusterOf(c.Options())
	defer cc.Close()
	return in.onCluster(ctx, cc)
}

// onCluster reads the key on the primary of cc that serves its slot, with
// the vouch of that slot.
func (in *Inspection) onCluster(ctx context.Context, cc *redis.ClusterClient) NodeInspection {
	p, err := cc.MasterForKey(ctx, in.Names.Lock)
	if err != nil {
		return NodeInspection{Cluster: true, Err: fmt.Errorf("a cluster node; its slot's primary: %w", err)}
	}
	ni, _ := in.read(ctx, p, TrustKeyFor(in.Names.Lock))
	ni.Cluster, ni.Primary = true, p.Options().Addr
	return ni
}

// clusterOf returns a ClusterClient seeded with the server of o, with its
// credentials, TLS and timeouts. The caller closes it.
func clusterOf(o *redis.Options) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{o.Addr}, Dialer: o.Dialer, TLSConfig: o.TLSConfig,
		Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider, Protocol: o.Protocol,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, DialerRetries: o.DialerRetries,
		MaintNotificationsConfig: o.MaintNotificationsConfig, DisableIdentity: o.DisableIdentity,
	})
}

// read reads the key on the server nd talks to in one pipeline, with the
// vouch recorded under trust. Reading a server in cluster mode with the
// vouch of TrustKey, it reports cluster and nothing else: the key lives on
// its slot's primary.
func (in *Inspection) read(ctx context.Context, nd redis.UniversalClient, trust string) (ni NodeInspection, cluster bool) {
	pipe := nd.Pipeline()
	writer := readHold(ctx, pipe, in.Names)
	now := pipe.Time(ctx)
	readers := pipe.ZRangeWithScores(ctx, in.Names.Readers, 0, -1)
	limit := pipe.Get(ctx, in.LimitKey)
	waiters := pipe.ZCard(ctx, in.QueueKey)
	permits := make([]holdRead, len(in.Permits))
	for i, p := range in.Permits {
		permits[i] = readHold(ctx, pipe, p)
	}
	info := pipe.InfoMap(ctx, "server")
	trusted := pipe.Get(ctx, trust)
	cmds, err := pipe.Exec(ctx)
	if trust == TrustKey && info.Val()["Server"]["redis_mode"] == "cluster" {
		return NodeInspection{}, true
	}
	// The start's commands last: a user without INFO still gets the rest.
	if err == nil || errors.Is(err, redis.Nil) || err == info.Err() || err == trusted.Err() {
		err = firstError(cmds[:len(cmds)-2])
	}
	if err != nil {
		return NodeInspection{Err: err}, false
	}
	ni.startFrom(info, trusted)
	ni.Writer, ni.Record = writer.state()
	ni.Readers = liveReaders(readers.Val(), now.Val())
	ni.Limit, _ = limit.Int() // absent: 0
	ni.Waiters = waiters.Val()
	ni.Permits = make([]HoldState, len(permits))
	for i, p := range permits {
		var record time.Duration
		ni.Permits[i], record = p.state()
		ni.Record = max(ni.Record, record)
	}
	return ni, false
}

// firstError returns the first error of cmds but redis.Nil, an absent
// key's answer: Exec reports only the first error, and a redis.Nil may hide
// a later one.
func firstError(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// startFrom reads the answers of INFO server and of GET of the vouch.
func (ni *NodeInspection) startFrom(info *redis.InfoCmd, trusted *redis.StringCmd) {
	if err := info.Err(); err != nil {
		ni.StartErr = err
		return
	}
	server := info.Val()["Server"]
	secs, err := strconv.Atoi(server["uptime_in_seconds"])
	if err != nil || server["run_id"] == "" {
		ni.StartErr = errors.New("INFO server lacks run_id or uptime_in_seconds")
		return
	}
	ni.RunID = server["run_id"]
	ni.Start = MasterStart{Known: true, Uptime: time.Duration(secs) * time.Second,
		Vouched: trusted.Err() == nil && trusted.Val() == ni.RunID}
}

// A holdRead is one lock's reads in a node's pipeline.
type holdRead struct {
	fields *redis.MapStringStringCmd // the lock's hash: "owner", "ttl", a field "h:<hold>" per hold
	pttl   *redis.Cmd
	fence  *redis.StringCmd
}

func readHold(ctx context.Context, pipe redis.Pipeliner, names KeyNames) holdRead {
	return holdRead{fields: pipe.HGetAll(ctx, names.Lock), pttl: pipe.Do(ctx, "PTTL", names.Lock), fence: pipe.Get(ctx, names.Fence)}
}

// state reads the answers, once the pipeline ran without error: the hold,
// and the lock's TTL record (prelude.lua: lease_ttl) — its field "ttl" in
// ms, MaxRestartGuard for a lock held without one, 0 when none is held.
func (r holdRead) state() (HoldState, time.Duration) {
	fields := r.fields.Val()
	var hs HoldState
	hs.Fence, _ = r.fence.Int64() // absent: 0
	if len(fields) == 0 {
		return hs, 0
	}
	record := MaxRestartGuard
	if ms, err := strconv.ParseInt(fields["ttl"], 10, 64); err == nil {
		record = time.Duration(ms) * time.Millisecond
	}
	if hs.Owner = fields["owner"]; hs.Owner != "" {
		ms, _ := r.pttl.Int64()
		hs.TTL = time.Duration(ms) * time.Millisecond
		for f := range fields {
			if strings.HasPrefix(f, "h:") {
				hs.Holds++
			}
		}
	}
	return hs, record
}

// liveReaders returns the members whose lease ends after now, the node's
// time.
func liveReaders(members []redis.Z, now time.Time) []string {
	var live []string
	for _, z := range members {
		if z.Score > float64(now.UnixMilli()) {
			live = append(live, fmt.Sprint(z.Member))
		}
	}
	return live
}

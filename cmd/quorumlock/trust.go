package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
	"golang.org/x/sync/errgroup"
)

// defaultTrustTimeout bounds each call of the vouch to a node.
const defaultTrustTimeout = 2 * time.Second

// exitInUse is trust's status when it refused masters that look in use.
const exitInUse = exitFailure

// A vouch is what trust did on one node.
type vouch struct {
	addr   string
	runID  string        // the process vouched for
	uptime time.Duration // how long it had been up
	err    error
}

func (c *cli) trust(args []string) int {
	fs := newFlagSet("trust")
	var t target
	t.registerNodes(fs, c.getenv)
	fs.StringVar(&t.prefix, "prefix", redlock.DefaultPrefix, "`prefix` of the keys the locks use: live locks under it mean the masters are in use")
	timeout := fs.Duration("timeout", defaultTrustTimeout, "timeout of each call of the vouch to a node")
	force := fs.Bool("force", false, "vouch even for masters that look in use (a warning names why)")
	if code, ok := c.parse(fs, trustUsage, args); !ok {
		return code
	}
	addrs, err := t.addrs()
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err == nil {
		err = positive("timeout", *timeout)
	}
	if err != nil {
		return c.usageError(fs, err)
	}
	ns, err := dial(addrs)
	if err != nil {
		return c.usageError(fs, err)
	}
	defer ns.close()
	members, closeMembers := ns.members(*timeout) // a cluster node: its cluster (cli_nodes.go)
	defer closeMembers()
	if !c.checkNew(ns, members, t.prefix, *timeout, *force) {
		return exitInUse
	}

	// Every node is vouched for in parallel; errgroup waits for all. A
	// node's failure stops none of the others: each is reported on its
	// line, and each primary of a cluster on its own. Each call is bounded
	// by timeout, not the whole vouch: a cluster primary writes a record
	// per slot it serves, thousands, in several pipelines (perCall).
	vouches := make([][]vouch, len(addrs))
	var g errgroup.Group
	for i, rdb := range members {
		g.Go(func() error {
			vouches[i] = vouchMember(perCall(*timeout), redactAddr(addrs[i]), rdb)
			return nil
		})
	}
	_ = g.Wait() // every node's error is in vouches, printed below
	failed := 0
	for _, vs := range vouches {
		if c.printVouches(vs) {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(c.stderr, "quorumlock trust: %d of %d nodes not vouched for\n", failed, len(vouches))
		return exitUnavailable
	}
	return exitOK
}

// printVouches prints one line per vouch and reports whether any failed.
func (c *cli) printVouches(vs []vouch) (failed bool) {
	for _, v := range vs {
		if v.err != nil {
			failed = true
			fmt.Fprintf(c.stdout, "%s\tnot vouched: %v\n", v.addr, v.err)
			continue
		}
		fmt.Fprintf(c.stdout, "%s\tvouched for run_id %s, up %v\n", v.addr, v.runID, v.uptime)
	}
	return failed
}

// checkNew runs redlock.CheckNew over nodes, the members of ns (a
// cluster's every primary), and reports whether trust may go
// on: with masters that look in use, it names each and why, and refuses
// unless force, which goes on with a warning. Nodes it cannot read are left
// to the vouch, which reports them.
func (c *cli) checkNew(ns *nodeSet, nodes []redis.UniversalClient, prefix string, timeout time.Duration, force bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	refused := 0
	for i, err := range redlock.CheckNew(ctx, nodes, prefix) {
		var e *redlock.InUseError
		if !errors.As(err, &e) {
			continue
		}
		refused++
		if !force {
			fmt.Fprintf(c.stdout, "%s\trefused: %s %s\n", redactAddr(ns.addrs[i]), redactAddr(ns.addrs[e.Other]), ns.redact(e.Why))
		} else {
			fmt.Fprintf(c.stderr, "quorumlock trust: warning: --force: vouching for %s although %s %s\n", redactAddr(ns.addrs[i]), redactAddr(ns.addrs[e.Other]), ns.redact(e.Why))
		}
	}
	if refused > 0 && !force {
		fmt.Fprintf(c.stderr, "quorumlock trust: %d of %d nodes refused, nothing vouched for: the masters are in use, and a master that restarted without its data must sit out the restart guard. "+
			"If every lease the refused ones could have granted has expired (or they are new), run again with --force.\n", refused, len(nodes))
		return false
	}
	return true
}

// vouchServer vouches for the process running at p, a plain master or a
// cluster primary (its slots' records), with redlock.TrustStart, and
// confirms it by its run_id, read before and after: unchanged, the
// process vouched for is the one running.
func vouchServer(ctx context.Context, p *redis.Client) vouch {
	var v vouch
	before, err := p.InfoMap(ctx, "server").Result()
	if err != nil {
		v.err = fmt.Errorf("INFO server: %w", err)
		return v
	}
	if v.err = redlock.TrustStart(ctx, p); v.err != nil {
		return v
	}
	after, err := p.InfoMap(ctx, "server").Result()
	if err != nil {
		v.err = fmt.Errorf("vouched, but reading it back: %w", err)
		return v
	}
	v.runID, v.uptime = after["Server"]["run_id"], uptimeOf(after["Server"])
	if was := before["Server"]["run_id"]; was != v.runID {
		v.err = fmt.Errorf("the server restarted during the vouch (run_id %s, was %s); run trust again if it is new", v.runID, was)
	}
	return v
}

// uptimeOf reads uptime_in_seconds of INFO server's section.
func uptimeOf(server map[string]string) time.Duration {
	secs, _ := strconv.Atoi(server["uptime_in_seconds"])
	return time.Duration(secs) * time.Second
}

var trustUsage = `Usage: quorumlock trust --nodes host:port,...

Vouch that each node's running Redis process is new — started with no lock
to forget — so that Clients count its grants at once instead of after the
restart guard (by default, when every master just started, ` + redlock.MaxRestartGuard.String() + `:
the first locks wait that long). It records the process's run_id on the node
(` + redlock.TrustKey + `, for a day); a later restart has another run_id and
sits out the guard as it should.

Use it when bringing up new masters, never after a master restarted
without its data while locks were held: that is what the guard is for.
So trust first checks the masters given (pass all of them): it refuses,
vouching for none, while any of them holds a live lock, reader or permit
under --prefix, or when one has been up longer than another by more than
` + redlock.NewSpread.String() + ` (the younger one may have restarted while in use), and names each
refused node and why. --force vouches anyway, with a warning: only for
masters that lost no lease still held. A replica (even a writable one)
is never vouched for; a node already vouched for is not checked again.

A node of a Redis Cluster (INFO server says redis_mode:cluster) stands for
its whole cluster: trust vouches for every primary of it, one line each
("host:port cluster: primary p"), each primary's record on every slot it
serves. Replicas are never vouched for: one promoted later has a run_id of
its own and counts by its uptime. Give one node per cluster.

Flags:
{{flags}}
Exit status:
  0    every node vouched for
  1    refused: the masters look in use (live locks, or starts far apart);
       nothing vouched for — see above, and --force
  2    bad flags or arguments
  69   some node could not be vouched for (unreachable, a replica, or its
       user may not run INFO, SCAN or SET); the others were

Examples:
  quorumlock trust --nodes r1:6379,r2:6379,r3:6379,r4:6379,r5:6379
  quorumlock trust --force --nodes r1:6379,r2:6379,r3:6379   # you know they lost nothing
`

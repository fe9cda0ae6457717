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

// defaultTrustTimeout bounds the vouch of each node.
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
	timeout := fs.Duration("timeout", defaultTrustTimeout, "timeout of the vouch on each node")
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
	if !c.checkNew(ns, t.prefix, *timeout, *force) {
		return exitInUse
	}

	// Every node is vouched for in parallel; errgroup waits for all. A
	// node's failure stops none of the others: each is reported on its line.
	vouches := make([]vouch, len(addrs))
	var g errgroup.Group
	for i, rdb := range ns.clients {
		g.Go(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), *timeout)
			defer cancel()
			vouches[i] = vouchFor(ctx, redactAddr(addrs[i]), rdb)
			return vouches[i].err
		})
	}
	_ = g.Wait() // every node's error is in vouches, printed below
	failed := 0
	for _, v := range vouches {
		if v.err != nil {
			failed++
			fmt.Fprintf(c.stdout, "%s\tnot vouched: %v\n", v.addr, v.err)
			continue
		}
		fmt.Fprintf(c.stdout, "%s\tvouched for run_id %s, up %v\n", v.addr, v.runID, v.uptime)
	}
	if failed > 0 {
		fmt.Fprintf(c.stderr, "quorumlock trust: %d of %d nodes not vouched for\n", failed, len(vouches))
		return exitUnavailable
	}
	return exitOK
}

// checkNew runs redlock.CheckNew over ns and reports whether trust may go
// on: with masters that look in use, it names each and why, and refuses
// unless force, which goes on with a warning. Nodes it cannot read are left
// to the vouch, which reports them.
func (c *cli) checkNew(ns *nodeSet, prefix string, timeout time.Duration, force bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nodes := make([]redis.UniversalClient, len(ns.clients))
	for i, rdb := range ns.clients {
		nodes[i] = rdb
	}
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

// vouchFor vouches for the process running at rdb (redlock.TrustStart) and
// reads back which process that was and how long it has been up.
func vouchFor(ctx context.Context, addr string, rdb *redis.Client) vouch {
	v := vouch{addr: addr}
	if v.err = redlock.TrustStart(ctx, rdb); v.err != nil {
		return v
	}
	vouched, err := rdb.Get(ctx, redlock.TrustKey).Result()
	info, ierr := rdb.InfoMap(ctx, "server").Result()
	if err = errors.Join(err, ierr); err != nil {
		v.err = fmt.Errorf("vouched, but reading it back: %w", err)
		return v
	}
	v.runID = info["Server"]["run_id"]
	uptime, _ := strconv.Atoi(info["Server"]["uptime_in_seconds"])
	v.uptime = time.Duration(uptime) * time.Second
	if v.runID != vouched {
		// Restarted in between: the vouch is for a process that is gone.
		v.err = fmt.Errorf("the server restarted during the vouch (run_id %s, vouched %s); run trust again if it is new", v.runID, vouched)
	}
	return v
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

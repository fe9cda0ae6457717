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
	timeout := fs.Duration("timeout", defaultTrustTimeout, "timeout of the vouch on each node")
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

const trustUsage = `Usage: quorumlock trust --nodes host:port,...

Vouch that each node's running Redis process is new — started with no lock
to forget — so that Clients count its grants at once instead of after the
restart guard (by default one TTL: the first locks after masters start
wait that long). It records the process's run_id on the node
(` + redlock.TrustKey + `, for a day); a later restart has another run_id and
sits out the guard as it should.

Use it when bringing up new masters, never after a master restarted
without its data while locks were held: that is what the guard is for.

Flags:
{{flags}}
Exit status:
  0    every node vouched for
  2    bad flags or arguments
  69   some node could not be vouched for (unreachable, or its user may not
       run INFO or SET); the others were

Examples:
  quorumlock trust --nodes r1:6379,r2:6379,r3:6379,r4:6379,r5:6379
`

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Defaults of the demo's flags.
const (
	embeddedNodes   = 5
	defaultWorkers  = 8
	defaultDuration = 5 * time.Second
	defaultStock    = 300 // enough to keep buying through the faults the demo injects
	defaultDemoTTL  = 500 * time.Millisecond
	// purchasePause is the time between reading and writing the stock.
	purchasePause = time.Millisecond
)

type demoFlags struct {
	target
	workers, stock             int
	duration, ttl, nodeTimeout time.Duration
	report                     string // --report: the page to draw the run on
}

func (f *demoFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	f.target.register(fs, getenv, "")
	fs.StringVar(&f.key, "key", "demo", "the lock's `name`")
	fs.IntVar(&f.workers, "workers", defaultWorkers, "number of concurrent buyers")
	fs.IntVar(&f.stock, "stock", defaultStock, "items on sale at the start")
	fs.DurationVar(&f.duration, "duration", defaultDuration, "how long the buyers buy")
	fs.DurationVar(&f.ttl, "ttl", defaultDemoTTL, "the lock's lease; the scenario's events are timed by it")
	fs.DurationVar(&f.nodeTimeout, "node-timeout", redlock.DefaultNodeTimeout, "timeout of every lock call to one node")
	fs.StringVar(&f.report, "report", "", "draw the run's holds and faults on the HTML page `FILE`, its history beside it (FILE.jsonl)")
}

func (f *demoFlags) check(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case f.key == "":
		return errors.New("--key must not be empty")
	case f.workers < 1:
		return fmt.Errorf("--workers %d must be at least 1", f.workers)
	case f.stock < 0:
		return fmt.Errorf("--stock %d must not be negative", f.stock)
	}
	return errors.Join(positive("duration", f.duration), positive("ttl", f.ttl), positive("node-timeout", f.nodeTimeout))
}

// A demoRun is one run of the oversell scenario.
type demoRun struct {
	demoFlags
	c      *cli
	conns  *nodeSet
	client *redlock.Client // the buyers'
	emb    *embedded       // nil when the nodes came from --nodes
	store  *store
	check  checker
	stats  buyerStats
	faults demoFaults
	hist   *demoHistory // --report; nil without
	start  time.Time
	ended  time.Time  // when the buyers stopped
	outMu  sync.Mutex // serializes progress lines
}

func (c *cli) demo(args []string) int {
	fs := newFlagSet("demo")
	var f demoFlags
	f.register(fs, c.getenv)
	if code, ok := c.parse(fs, demoUsage, args); !ok {
		return code
	}
	if err := f.check(fs); err != nil {
		return c.usageError(fs, err)
	}
	d := &demoRun{demoFlags: f, c: c}
	cleanup, err := d.setUp()
	defer cleanup()
	switch {
	case errors.Is(err, redlock.ErrInvalid) || errors.Is(err, errBadNode):
		return c.usageError(fs, err)
	case err != nil:
		fmt.Fprintf(c.stderr, "quorumlock demo: %v\n", err)
		return exitFailure
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d.play(ctx)
	code := d.report()
	if d.hist != nil {
		d.client.Close() // ends every lock the history waits for
		if err := d.hist.finish(d); err != nil {
			fmt.Fprintf(c.stderr, "quorumlock demo: --report: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(c.stderr, "report: %s (history %s)\n", d.hist.page, d.hist.path)
	}
	return code
}

// setUp starts or dials the nodes, the store and the client. cleanup undoes
// whatever was done, even on error.
func (d *demoRun) setUp() (cleanup func(), err error) {
	var undo []func()
	cleanup = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if d.demoFlags.report != "" {
		if d.hist, err = openDemoHistory(d.demoFlags.report); err != nil {
			return cleanup, err
		}
		undo = append(undo, func() { d.hist.file.Close() })
	}
	storeAddr, err := d.startNodes(&undo)
	if err != nil {
		return cleanup, err
	}
	if d.conns, err = dial(d.addrs()); err != nil {
		return cleanup, err
	}
	undo = append(undo, d.conns.close)
	if d.client, err = redlock.New(d.conns.universal(), d.options()...); err != nil {
		return cleanup, err
	}
	undo = append(undo, func() { d.client.Close() })
	opt, err := nodeOptions(storeAddr)
	if err != nil {
		return cleanup, err
	}
	rdb := redis.NewClient(opt)
	undo = append(undo, func() { rdb.Close() })
	d.store = newStore(rdb, d.prefix, d.key)
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	if err := d.store.reset(ctx, d.stock); err != nil {
		return cleanup, fmt.Errorf("store on %s: %w", redactAddr(storeAddr), err)
	}
	d.conns.warm(ctx, warmTimeout)
	return cleanup, nil
}

// options are the lock's options, for the buyers and the crashing holder.
func (d *demoRun) options() []redlock.Option {
	return []redlock.Option{redlock.WithTTL(d.ttl), redlock.WithNodeTimeout(d.nodeTimeout), redlock.WithPrefix(d.prefix)}
}

// startNodes starts the embedded nodes and store unless --nodes names real
// ones, whose first node then keeps the store. It returns the store's address.
func (d *demoRun) startNodes(undo *[]func()) (string, error) {
	if d.target.nodes != "" {
		addrs, err := d.target.addrs()
		if err != nil {
			return "", err
		}
		d.progress("%d nodes from --nodes; the stock is kept on %s", len(addrs), redactAddr(addrs[0]))
		return addrs[0], nil
	}
	emb, err := startEmbedded(embeddedNodes + 1) // the last one is the store
	if err != nil {
		return "", err
	}
	*undo = append(*undo, emb.close)
	d.emb = emb
	d.progress("%d embedded nodes on %v; the stock is kept on %s", embeddedNodes, d.addrs(), emb.addrs[embeddedNodes])
	return emb.addrs[embeddedNodes], nil
}

// addrs returns the lock's node addresses.
func (d *demoRun) addrs() []string {
	if d.emb != nil {
		return d.emb.addrs[:embeddedNodes]
	}
	addrs, _ := d.target.addrs()
	return addrs
}

// play runs the buyers, the scenario's events and the progress lines until
// the duration is over or ctx ends.
func (d *demoRun) play(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.duration)
	defer cancel()
	d.start = time.Now()
	d.progress("%d buyers, %d items, lock TTL %v, for %v", d.workers, d.stock, d.ttl, d.duration)
	var wg sync.WaitGroup
	for i := range d.workers {
		wg.Go(func() { d.buyer(ctx, d.hist.as(fmt.Sprintf("buyer %d", i+1))) })
	}
	wg.Go(func() { d.faults.play(ctx, d) })
	wg.Go(func() { d.ticker(ctx) })
	wg.Wait()
	d.ended = time.Now()
}

// buyer buys one item after another, each under the lock, until ctx ends.
// The buyers share one Client, as the goroutines of one service would;
// opts go to every Do.
func (d *demoRun) buyer(ctx context.Context, opts []redlock.Option) {
	for {
		var bought bool
		asked := time.Now()
		err := d.client.Do(ctx, d.key, func(ctx context.Context) error {
			d.stats.waited(time.Since(asked))
			d.faults.entered()
			defer d.check.enter()()
			left, err := d.store.buy(ctx, purchasePause)
			if bought = left >= 0 && err == nil; bought && left == 0 {
				d.progress("sold out")
			}
			return err
		}, opts...)
		if !d.stats.record(ctx, bought, err) {
			return
		}
	}
}

// progress writes one line to stderr, stamped with the time since the start.
func (d *demoRun) progress(format string, args ...any) {
	var at time.Duration
	if !d.start.IsZero() {
		at = time.Since(d.start).Truncate(10 * time.Millisecond)
	}
	d.outMu.Lock()
	defer d.outMu.Unlock()
	fmt.Fprintf(d.c.stderr, "demo %6s  %s\n", fmtSeconds(at), fmt.Sprintf(format, args...))
}

func fmtSeconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

const demoUsage = `Usage: quorumlock demo [--nodes host:port,...] [flags]

The classic oversell scenario. Buyers sell one item after another from a
stock counter: each purchase reads the stock, pauses, and writes it back
decremented, with nothing but the lock (Client.Do) to keep two buyers from
selling the last item twice. Meanwhile:

  - one node is killed at 1/5 of the run, and restarted empty more than a
    TTL later (Redlock's delayed restart): a minority down must not stop
    the buyers;
  - from a quarter of the run, another process waits its turn, keeps the
    lock for 1.5 TTL (its watchdog must renew it), then crashes without
    releasing it: a buyer must take over once the lease expires.

With neither --nodes nor $QUORUMLOCK_NODES, the demo starts five embedded
Redis-compatible nodes in-process (package redlocktest) and a sixth for the
stock: no server to install. The restarted node sits out the restart guard,
as a real master would. With --nodes, it runs on those masters, keeps the stock on
the first one (keys <prefix>demo:{<key>}:stock and :sold, overwritten at the
start), and kills nothing. The overlap check sees this process's buyers only.

It prints a progress line a second to stderr, then a table to stdout: sold,
stock left, oversold, lost updates, overlaps, locks lost, p50/p99 wait, and
what the watchdog and the expiry did.

Flags:
{{flags}}
Exit status:
  0    nothing oversold, no lost update, no overlap, something sold
  1    one of those checks failed, or the nodes or the store could not be used
  2    bad flags or arguments

Examples:
  go run ./cmd/quorumlock demo
  quorumlock demo --workers 32 --duration 20s --stock 5000
  quorumlock demo --nodes localhost:7001,localhost:7002,localhost:7003,localhost:7004,localhost:7005
`

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Defaults of run's flags that the library does not define.
const (
	// defaultGrace is how long CMD may take to exit after SIGTERM once the
	// lock is lost. It runs unprotected meanwhile, so keep it short.
	defaultGrace = 2 * time.Second
	// releaseTimeout bounds the release after CMD exits.
	releaseTimeout = 5 * time.Second
)

type runFlags struct {
	target
	keys                          string
	read                          bool
	limit                         int
	ttl, wait, grace, nodeTimeout time.Duration
	claim                         claim // what the flags ask for, once checked
}

func (f *runFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	f.target.register(fs, getenv, "the lock's `name`; processes that share it never run CMD at the same time (this or --keys is required)")
	fs.StringVar(&f.keys, "keys", "", "comma-separated `names` of locks to hold all at once, or none: CMD runs only while it holds every one")
	fs.BoolVar(&f.read, "read", false, "hold --key shared: any number of --read runs at once, but none while a run without --read holds it")
	fs.IntVar(&f.limit, "limit", 0, fmt.Sprintf("hold one of `N` permits of --key (1 to %d): at most N runs at once", redlock.MaxLimit))
	fs.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL,
		"lease on each node, renewed every ttl/3 while CMD runs; bounds how long a crashed quorumlock blocks others")
	fs.DurationVar(&f.wait, "wait", 0, "how long to wait for the lock when it is held; 0 makes a single attempt, as flock -n")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "after the lock is lost, time between SIGTERM and SIGKILL to CMD")
	fs.DurationVar(&f.nodeTimeout, "node-timeout", redlock.DefaultNodeTimeout, "timeout of every lock call to one node")
}

// check validates the flags that fs parsed and CMD, sets f.claim, and
// returns the node addresses.
func (f *runFlags) check(fs *flag.FlagSet) ([]string, error) {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	var err error
	if f.claim, err = checkClaim(f.key, f.keys, f.read, f.limit, given); err != nil {
		return nil, err
	}
	addrs, err := f.target.addrs()
	switch {
	case err != nil:
		return nil, err
	case fs.NArg() == 0:
		return nil, errors.New("no command to run: give it after --")
	case f.wait < 0:
		return nil, fmt.Errorf("--wait %v must not be negative", f.wait)
	}
	return addrs, errors.Join(positive("ttl", f.ttl), positive("grace", f.grace), positive("node-timeout", f.nodeTimeout))
}

func (c *cli) run(args []string) int {
	fs := newFlagSet("run")
	var f runFlags
	f.register(fs, c.getenv)
	if code, ok := c.parse(fs, runUsage, args); !ok {
		return code
	}
	addrs, err := f.check(fs)
	if err != nil {
		return c.usageError(fs, err)
	}
	ns, err := dial(addrs)
	if err != nil {
		return c.usageError(fs, err)
	}
	defer ns.close()
	client, err := redlock.New(ns.universal(), redlock.WithTTL(f.ttl), redlock.WithNodeTimeout(f.nodeTimeout),
		redlock.WithPrefix(f.prefix), redlock.WithAutoRenew(true))
	if err != nil {
		return c.usageError(fs, err)
	}
	defer client.Close()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	l, code := c.acquire(client, ns, &f, sigs)
	if l == nil {
		return code
	}
	return c.supervise(l, fs.Args(), &f, sigs)
}

// A signalError is the cause of a wait interrupted by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "interrupted by " + e.sig.String() }

// acquire takes the lock, waiting up to --wait, and gives up early on a
// signal. Without the lock it returns the exit status.
func (c *cli) acquire(client *redlock.Client, ns *nodeSet, f *runFlags, sigs <-chan os.Signal) (*redlock.Lock, int) {
	ctx, cancel := context.WithCancelCause(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case s := <-sigs:
			cancel(signalError{s})
		case <-ctx.Done():
		}
	}()
	ns.warm(ctx)
	l, err := tryOrWait(ctx, client, f)
	cancel(nil)
	<-watched
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		if l != nil {
			c.reportRelease(f.claim, c.release(l))
		}
		fmt.Fprintf(c.stderr, "quorumlock: waiting for %v %v\n", f.claim, sig)
		return nil, 128 + signalNumber(sig.sig)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock: %v not obtained (waited %v): %v\n", f.claim, f.wait, err)
		return nil, notObtainedStatus(context.WithoutCancel(ctx), ns, err)
	}
	return l, exitOK
}

// tryOrWait makes one attempt when --wait is 0, else waits up to --wait.
func tryOrWait(ctx context.Context, client *redlock.Client, f *runFlags) (*redlock.Lock, error) {
	if f.wait == 0 {
		return f.claim.try(ctx, client)
	}
	ctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	return f.claim.wait(ctx, client)
}

// notObtainedStatus tells a lock held elsewhere from nodes that do not
// answer: by the last attempt's refusals, or else by pinging the nodes
// (the last attempt may have been cut short by the end of --wait). A
// --limit other than the current holders' is a usage error.
func notObtainedStatus(ctx context.Context, ns *nodeSet, err error) int {
	switch {
	case errors.Is(err, redlock.ErrInvalid):
		return exitUsage
	case !errors.Is(err, redlock.ErrNotObtained):
		return exitInternal
	}
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		for _, v := range qe.Votes {
			if v.Outcome == redlock.Refused {
				return exitTempFail
			}
		}
	}
	if ns.reachable(ctx) < quorum.Majority(len(ns.clients)) {
		return exitUnavailable
	}
	return exitTempFail
}

// release unlocks l after CMD exited and returns what went wrong, if
// anything; its caller decides the exit status.
func (c *cli) release(l *redlock.Lock) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return l.Unlock(ctx)
}

const runUsage = `Usage: quorumlock run --nodes host:port,... --key K [--read | --limit N] [flags] -- CMD [ARGS...]
       quorumlock run --nodes host:port,... --keys K1,K2,... [flags] -- CMD [ARGS...]

Acquire the lock K on a majority of the nodes, run CMD while the lock is
renewed every ttl/3, release the lock when CMD exits, and exit with CMD's
status: a distributed flock(1). CMD inherits stdin, stdout and stderr, and
runs in its own process group with $QUORUMLOCK_KEY (K) and $QUORUMLOCK_TOKEN
(the lock's fencing token: pass it to stores that reject stale writers).

Other kinds of hold:
  --keys K1,K2,...  every lock of the list at once, or none: never part of
                    them while waiting for the rest, so runs whose lists
                    overlap, in any order, do not deadlock. $QUORUMLOCK_KEY
                    is the list, $QUORUMLOCK_TOKEN the largest token, and
                    $QUORUMLOCK_TOKENS each key's token as K1=T1,K2=T2,...
                    in the order given (split at the commas, then at the
                    last '=').
  --read            a shared hold of K: runs with --read run together, but
                    never while a run without --read holds K.
  --limit N         one of N permits of K, a semaphore: at most N runs at
                    once; every run of K must give the same N.
                    $QUORUMLOCK_PERMIT is the permit held, in [0, N), and
                    $QUORUMLOCK_TOKEN that permit's token: fence per K and
                    permit.

SIGINT, SIGTERM and SIGHUP sent to quorumlock are forwarded to CMD's process
group. If the lock is lost while CMD runs (too few nodes renewed it before
its validity ran out), CMD's process group gets SIGTERM, then SIGKILL after
--grace, and quorumlock exits with status 77. CMD runs unprotected from the
loss until it exits: handle SIGTERM promptly.

Flags:
{{flags}}
Exit status:
  CMD's status  CMD ran under the lock (128+N if it died of signal N)
  2             bad flags or arguments, or --limit N while K is held with
                another limit
  69            fewer than a majority of nodes answered (EX_UNAVAILABLE)
  75            the lock is held elsewhere (with --limit, every permit): not
                obtained within --wait (EX_TEMPFAIL)
  77            the lock was lost while CMD ran, or found lost at release: CMD
                was stopped, and its work may have overlapped another holder's
                (EX_NOPERM)
  125           quorumlock itself failed
  126, 127      CMD could not be executed, or was not found

Examples:
  # Run the nightly report on one machine of the fleet at most; skip it if
  # another machine runs it already.
  quorumlock run --nodes r1:6379,r2:6379,r3:6379 --key nightly-report -- ./report.sh

  # Queue up to ten minutes behind other deployments.
  export QUORUMLOCK_NODES=r1:6379,r2:6379,r3:6379
  quorumlock run --key deploy --wait 10m -- make deploy

  # Use the fencing token in a script.
  quorumlock run --key migrate -- sh -c 'psql -c "select migrate($QUORUMLOCK_TOKEN)"'

  # Move stock between two warehouses: both locks, or wait for both.
  quorumlock run --keys stock-east,stock-west --wait 1m -- ./transfer.sh

  # Back up while other readers read, but never during a schema change
  # (which runs with --key schema, without --read).
  quorumlock run --key schema --read --wait 5m -- ./backup.sh

  # At most four encoders at once over the fleet.
  quorumlock run --key encoder --limit 4 --wait 1h -- sh -c 'encode --slot "$QUORUMLOCK_PERMIT"'
`

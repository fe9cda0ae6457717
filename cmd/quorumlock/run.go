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
	ttl, wait, grace, nodeTimeout time.Duration
}

func (f *runFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	f.target.register(fs, getenv, "the lock's `name`; processes that share it never run CMD at the same time (required)")
	fs.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL,
		"lease on each node, renewed every ttl/3 while CMD runs; bounds how long a crashed quorumlock blocks others")
	fs.DurationVar(&f.wait, "wait", 0, "how long to wait for the lock when it is held; 0 makes a single attempt, as flock -n")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "after the lock is lost, time between SIGTERM and SIGKILL to CMD")
	fs.DurationVar(&f.nodeTimeout, "node-timeout", redlock.DefaultNodeTimeout, "timeout of every lock call to one node")
}

// check validates the flags and CMD, and returns the node addresses.
func (f *runFlags) check(argv []string) ([]string, error) {
	addrs, err := f.target.check()
	switch {
	case err != nil:
		return nil, err
	case len(argv) == 0:
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
	argv := fs.Args()
	addrs, err := f.check(argv)
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
	return c.supervise(l, argv, &f, sigs)
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
			c.reportRelease(l, c.release(l))
		}
		fmt.Fprintf(c.stderr, "quorumlock: waiting for lock %q %v\n", f.key, sig)
		return nil, 128 + signalNumber(sig.sig)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock: lock %q not obtained (waited %v): %v\n", f.key, f.wait, err)
		return nil, notObtainedStatus(context.WithoutCancel(ctx), ns, err)
	}
	return l, exitOK
}

// tryOrWait makes one attempt when --wait is 0, else waits up to --wait.
func tryOrWait(ctx context.Context, client *redlock.Client, f *runFlags) (*redlock.Lock, error) {
	if f.wait == 0 {
		return client.TryLock(ctx, f.key)
	}
	ctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	return client.Lock(ctx, f.key)
}

// notObtainedStatus tells a lock held elsewhere from nodes that do not
// answer: by the last attempt's refusals, or else by pinging the nodes
// (the last attempt may have been cut short by the end of --wait).
func notObtainedStatus(ctx context.Context, ns *nodeSet, err error) int {
	if !errors.Is(err, redlock.ErrNotObtained) {
		return exitInternal
	}
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		for _, v := range qe.Votes {
			if v.Outcome == quorum.Refused {
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

const runUsage = `Usage: quorumlock run --nodes host:port,... --key K [flags] -- CMD [ARGS...]

Acquire the lock K on a majority of the nodes, run CMD while the lock is
renewed every ttl/3, release the lock when CMD exits, and exit with CMD's
status: a distributed flock(1). CMD inherits stdin, stdout and stderr, and
runs in its own process group with $QUORUMLOCK_KEY (K) and $QUORUMLOCK_TOKEN
(the lock's fencing token: pass it to stores that reject stale writers).

SIGINT, SIGTERM and SIGHUP sent to quorumlock are forwarded to CMD's process
group. If the lock is lost while CMD runs (too few nodes renewed it before
its validity ran out), CMD's process group gets SIGTERM, then SIGKILL after
--grace, and quorumlock exits with status 77. CMD runs unprotected from the
loss until it exits: handle SIGTERM promptly.

Flags:
{{flags}}
Exit status:
  CMD's status  CMD ran under the lock (128+N if it died of signal N)
  2             bad flags or arguments
  69            fewer than a majority of nodes answered (EX_UNAVAILABLE)
  75            the lock is held elsewhere: not obtained within --wait (EX_TEMPFAIL)
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
`

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

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
	guard                         time.Duration // --restart-guard, when guardSet
	guardSet                      bool
	conflict                      int   // --conflict-exit-code
	killGroup                     bool  // --kill-group
	verbose                       bool  // -v
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
	fs.DurationVar(&f.guard, "restart-guard", 0, guardUsage)
	fs.IntVar(&f.conflict, "conflict-exit-code", exitTempFail, "exit `status` when the lock is held elsewhere (as flock -E)")
	fs.IntVar(&f.conflict, "E", exitTempFail, "short for --conflict-exit-code")
	fs.BoolVar(&f.killGroup, "kill-group", false, "when CMD exits, send what is left of its process group SIGTERM (SIGKILL after --grace) "+
		"instead of holding the lock until it exits by itself")
	fs.BoolVar(&f.verbose, "v", false, "log node failures, renewals and the lock's life on stderr")
}

// guardUsage is --restart-guard's text, for run and elect alike.
var guardUsage = "count a master's grants only once its process has been up this long; " +
	"must cover the longest TTL of every client of these masters; 0 turns restart detection off " +
	"(default: the longest TTL in use on the key, at least --ttl, at most " + redlock.MaxRestartGuard.String() + " unless --ttl is longer; " +
	redlock.MaxRestartGuard.String() + ", or --ttl if longer, while no master has been up that long or is vouched for — " +
	"'quorumlock status' shows it)"

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
	if err != nil {
		return nil, err
	}
	return addrs, f.checkCommon(fs, given)
}

// checkCommon validates what run and elect share: CMD, and every duration
// and exit status flag.
func (f *runFlags) checkCommon(fs *flag.FlagSet, given map[string]bool) error {
	switch {
	case fs.NArg() == 0:
		return errors.New("no command to run: give it after --")
	case f.wait < 0:
		return fmt.Errorf("--wait %v must not be negative", f.wait)
	case f.guard < 0:
		return fmt.Errorf("--restart-guard %v must not be negative", f.guard)
	case f.conflict < 0 || f.conflict > 255:
		return fmt.Errorf("--conflict-exit-code %d must be in [0, 255]", f.conflict)
	}
	f.guardSet = given["restart-guard"]
	return errors.Join(positive("ttl", f.ttl), positive("grace", f.grace), positive("node-timeout", f.nodeTimeout),
		atMost("ttl", f.ttl, maxTTL), atMost("wait", f.wait, redlock.MaxDuration), atMost("grace", f.grace, redlock.MaxDuration),
		atMost("node-timeout", f.nodeTimeout, redlock.MaxDuration), atMost("restart-guard", f.guard, redlock.MaxDuration))
}

func (c *cli) run(args []string) int {
	defer catchSIGPIPE()()
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
	return c.launch(fs, &f, addrs)
}

// catchSIGPIPE makes diagnostics never end a run or an election: with
// SIGPIPE caught, a write to a stderr whose reader went away (a closed log
// pipe) fails with EPIPE instead of killing quorumlock — and with it CMD,
// which its keeper would kill, and the lock, left for its TTL. CMD still
// starts with SIGPIPE's default action: exec resets a caught signal. The
// returned func stops catching it.
func catchSIGPIPE() (stop func()) {
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	return func() { signal.Stop(pipe) }
}

// launch takes what f claims through the nodes at addrs (a lock, or with
// elect a leadership), runs CMD — fs's arguments — under it, and returns
// run's exit status. extra options go after f's.
func (c *cli) launch(fs *flag.FlagSet, f *runFlags, addrs []string, extra ...redlock.Option) int {
	path, code, err := findCommand(fs.Arg(0))
	if err != nil { // before the claim: a wrong command must not wait for it
		fmt.Fprintf(c.stderr, "quorumlock: %v\n", err)
		return code
	}
	ns, err := dial(addrs)
	if err != nil {
		return c.usageError(fs, err)
	}
	c.verbose = f.verbose
	// A node of a Redis Cluster stands for its whole cluster (members, cli_nodes.go).
	members, closeMembers := ns.members(clusterProbe)
	client, err := redlock.New(members, append(f.options(c), extra...)...)
	if err != nil {
		closeMembers()
		ns.close()
		return c.usageError(fs, errors.New(ns.redact(err.Error())))
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	begin := time.Now()
	l, code := c.acquire(client, ns, f, sigs)
	if l != nil {
		code = c.supervise(l, ns, path, fs.Args(), f, sigs)
		begin = time.Now()
	}
	// Close waits for work in flight up to the end of --wait (from CMD's
	// end, once it ran), at least a node timeout from now.
	deadline := begin.Add(f.wait)
	if now := time.Now(); deadline.Before(now) {
		deadline = now
	}
	closeWithin(deadline.Add(f.nodeTimeout), client, ns, closeMembers)
	return code
}

// clusterProbe bounds run's INFO to each node, which tells a Redis Cluster
// node from a plain master: a node that does not answer within it is taken
// for a plain master (a down node costs run no more than this at start).
const clusterProbe = 500 * time.Millisecond

// options are the Client's options for f.
func (f *runFlags) options(c *cli) []redlock.Option {
	opts := []redlock.Option{redlock.WithTTL(f.ttl), redlock.WithNodeTimeout(f.nodeTimeout),
		redlock.WithFenceRetention(fenceRetention(f.ttl)), redlock.WithPrefix(f.prefix), redlock.WithAutoRenew(true), redlock.WithObserver(c.lockLog())}
	if f.guardSet {
		opts = append(opts, redlock.WithRestartGuard(f.guard))
	}
	if f.verbose {
		opts = append(opts, redlock.WithLogger(c.logger()))
	}
	return opts
}

// closeSlack is how long run waits for the Client and the node connections
// to close at least; never longer than the deadline it is given otherwise,
// since a hung node may hold a close up (the lock is released or failed by
// then, and the process exits).
const closeSlack = 50 * time.Millisecond

// closeWithin closes the Client, the cluster clients run made and the node
// connections, waiting for that until deadline (at least closeSlack).
func closeWithin(deadline time.Time, client *redlock.Client, ns *nodeSet, closeMembers func()) {
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		client.Close()
		closeMembers()
		ns.close()
	}()
	t := time.NewTimer(max(time.Until(deadline), closeSlack))
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
	}
}

// A signalError is the cause of a wait interrupted by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "interrupted by " + e.sig.String() }

// acquire takes the lock, waiting up to --wait, and gives up early on a
// signal (SIGTSTP stops quorumlock, then the wait goes on). Without the lock
// it returns the exit status, within --wait plus the node timeout.
func (c *cli) acquire(client *redlock.Client, ns *nodeSet, f *runFlags, sigs <-chan os.Signal) (*redlock.Lock, int) {
	deadline := time.Now().Add(f.wait + f.nodeTimeout)
	ctx, cancel := context.WithCancelCause(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGTSTP {
					syscall.Kill(os.Getpid(), syscall.SIGSTOP)
					continue
				}
				cancel(signalError{s})
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	ns.warm(ctx, min(warmTimeout, max(f.wait, f.nodeTimeout)))
	l, err := tryOrWait(ctx, client, f, deadline.Add(-f.nodeTimeout))
	cancel(nil)
	<-watched
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		if l != nil {
			c.reportRelease(f.claim, c.release(l))
		}
		fmt.Fprintf(c.stderr, "quorumlock: waiting for %v %v\n", f.claim, sig)
		if s, ok := sig.sig.(syscall.Signal); ok && raised[s] {
			c.raise = s
		}
		return nil, 128 + signalNumber(sig.sig)
	}
	if err != nil {
		code, why := c.notObtained(ns, f, err, deadline)
		waited := ""
		if f.wait > 0 {
			waited = fmt.Sprintf(" within --wait %v", f.wait)
		}
		fmt.Fprintf(c.stderr, "quorumlock: %v not obtained%s: %s\n", f.claim, waited, why)
		return nil, code
	}
	return l, exitOK
}

// tryOrWait makes one attempt when --wait is 0, else waits until the end of
// --wait, counted from the start of the acquisition.
func tryOrWait(ctx context.Context, client *redlock.Client, f *runFlags, end time.Time) (*redlock.Lock, error) {
	if f.wait == 0 {
		return f.claim.try(ctx, client)
	}
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	return f.claim.wait(ctx, client)
}

// release unlocks l after CMD exited and returns what went wrong, if
// anything; its caller decides the exit status.
func (c *cli) release(l *redlock.Lock) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return l.Unlock(ctx)
}

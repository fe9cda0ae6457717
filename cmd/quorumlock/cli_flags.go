package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// flagsMarker marks where a usage text lists its subcommand's flags.
const flagsMarker = "{{flags}}"

// newFlagSet returns the FlagSet of one subcommand. It prints nothing by
// itself: parse reports errors and help.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("quorumlock "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses args into fs. It reports whether the invocation goes on; if
// not, code is its exit status: 0 after -h (usage on stdout), 2 after a bad
// flag (the error on stderr, with a pointer to -h).
func (c *cli) parse(fs *flag.FlagSet, usage string, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		c.printUsage(fs, usage)
		return exitOK, false
	}
	return c.usageError(fs, err), false
}

// usageError reports a bad invocation of fs's subcommand on stderr and
// returns exitUsage.
func (c *cli) usageError(fs *flag.FlagSet, err error) int {
	fmt.Fprintf(c.stderr, "%s: %v\nRun '%s -h' for usage.\n", fs.Name(), err, fs.Name())
	return exitUsage
}

// printUsage writes usage to stdout with fs's flags in place of flagsMarker.
func (c *cli) printUsage(fs *flag.FlagSet, usage string) {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(c.stdout, strings.Replace(usage, flagsMarker, b.String(), 1))
}

// A target names the nodes and the key a subcommand works on.
type target struct {
	nodes  string
	key    string
	prefix string
}

// register adds --nodes (default $QUORUMLOCK_NODES) and --prefix to fs, and
// --key when key is the key's description.
func (t *target) register(fs *flag.FlagSet, getenv func(string) string, key string) {
	t.registerNodes(fs, getenv)
	if key != "" {
		fs.StringVar(&t.key, "key", "", key)
	}
	fs.StringVar(&t.prefix, "prefix", redlock.DefaultPrefix, "`prefix` of the keys the lock uses")
}

// registerNodes adds --nodes alone, for a subcommand about the nodes
// rather than a key.
func (t *target) registerNodes(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&t.nodes, "nodes", getenv(envNodes),
		"comma-separated `host:port` or redis:// URLs of independent masters (default $"+envNodes+")")
}

// addrs returns the node addresses, or an error if there are none.
func (t *target) addrs() ([]string, error) {
	var addrs []string
	for _, a := range strings.Split(t.nodes, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no nodes: set --nodes or $%s", envNodes)
	}
	return addrs, nil
}

// check returns the node addresses after checking that a key was given.
func (t *target) check() ([]string, error) {
	if t.key == "" {
		return nil, errors.New("--key is required")
	}
	return t.addrs()
}

// atMost returns an error naming flag when d is longer than limit: a
// duration flag is refused beyond redlock.MaxDuration (or less, where a
// setting derived from it must fit), as the library refuses such options,
// so that no deadline derived from it overflows.
func atMost(flag string, d, limit time.Duration) error {
	if d > limit {
		return fmt.Errorf("--%s %v must be at most %v", flag, d, limit)
	}
	return nil
}

// positive returns an error naming flag when d is not positive.
func positive(flag string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("--%s %v must be positive", flag, d)
	}
	return nil
}

// A guardSetting is the restart guard a run's Client uses: --ttl, and
// --restart-guard when given (else the library's default guard). status
// shows the guard that a run with the same flags meets.
type guardSetting struct {
	ttl, guard time.Duration
	guardSet   bool
}

// view is how the restart guard stands for a run with g over masters that
// said starts, the longest TTL record on the keys being longest: the
// library's computation (redlock.ViewRestartGuard), shared by status and
// run's exit status 76.
func (g guardSetting) view(starts []redlock.MasterStart, longest time.Duration) (redlock.GuardView, error) {
	opts := []redlock.Option{redlock.WithTTL(g.ttl), redlock.WithFenceRetention(fenceRetention(g.ttl))}
	if g.guardSet {
		opts = append(opts, redlock.WithRestartGuard(g.guard))
	}
	return redlock.ViewRestartGuard(starts, longest, opts...)
}

// maxTTL bounds --ttl: the fencing state is kept fenceRetention(ttl), at
// most redlock.MaxDuration.
const maxTTL = redlock.MaxDuration / 2

// fenceRetention is how long run's fencing state outlives the lock's last
// grant or release: the library's default, or twice the TTL when that is
// longer — the library refuses a retention not longer than the TTL, and
// run has no flag for it.
func fenceRetention(ttl time.Duration) time.Duration {
	return max(redlock.DefaultFenceRetention, 2*ttl)
}

package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// electForever is the maximum wait of elect's --wait 0: campaign until
// leading (or a signal).
const electForever = redlock.MaxDuration

// register adds elect's flags to fs: run's, with --name and --value in place
// of --key, --keys, --read and --limit.
func (f *runFlags) registerElect(fs *flag.FlagSet, getenv func(string) string, value *string) {
	f.target.register(fs, getenv, "")
	fs.StringVar(&f.key, "name", "", "the election's `name`: processes that share it never lead at the same time (required)")
	fs.StringVar(value, "value", "", fmt.Sprintf("what this process campaigns with, shown by quorumlock leader (at most %d bytes)", redlock.MaxLeaderValue))
	fs.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL,
		"lease on each node, renewed every ttl/3 while CMD runs; bounds how long a crashed leader keeps the others waiting")
	fs.DurationVar(&f.wait, "wait", 0, "how long to campaign before giving up; 0 campaigns until leading")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "after the leadership is lost, time between SIGTERM and SIGKILL to CMD")
	fs.DurationVar(&f.nodeTimeout, "node-timeout", redlock.DefaultNodeTimeout, "timeout of every call to one node")
	fs.DurationVar(&f.guard, "restart-guard", 0, guardUsage)
	fs.IntVar(&f.conflict, "conflict-exit-code", exitTempFail, "exit `status` when not leading within --wait")
	fs.BoolVar(&f.killGroup, "kill-group", false, "when CMD exits, send what is left of its process group SIGTERM (SIGKILL after --grace)")
	fs.BoolVar(&f.verbose, "v", false, "log node failures, renewals and the leadership's life on stderr")
}

// checkElect validates elect's flags and CMD, sets f.claim, and returns the
// node addresses.
func (f *runFlags) checkElect(fs *flag.FlagSet, value string) ([]string, error) {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	addrs, err := f.target.addrs()
	switch {
	case err != nil:
		return nil, err
	case f.key == "":
		return nil, errors.New("--name is required")
	case len(value) > redlock.MaxLeaderValue:
		return nil, fmt.Errorf("--value is %d bytes, longer than %d", len(value), redlock.MaxLeaderValue)
	}
	f.claim = claim{keys: []string{f.key}, elect: true, value: value}
	return addrs, f.checkCommon(fs, given)
}

// elect campaigns for --name and runs CMD while leading, as run does under
// a lock: the same keeper, signals and exit statuses, with the term in
// $QUORUMLOCK_TERM. CMD's exit resigns.
func (c *cli) elect(args []string) int {
	defer catchSIGPIPE()()
	fs := newFlagSet("elect")
	var f runFlags
	var value string
	f.registerElect(fs, c.getenv, &value)
	if code, ok := c.parse(fs, electUsage, args); !ok {
		return code
	}
	addrs, err := f.checkElect(fs, value)
	if err != nil {
		return c.usageError(fs, err)
	}
	if f.wait == 0 { // run's single attempt: a Campaign that waits until leading
		return c.launch(fs, &f, addrs, redlock.WithMaxWait(electForever))
	}
	return c.launch(fs, &f, addrs)
}

const electUsage = `Usage: quorumlock elect --nodes host:port,... --name N [--value V] [flags] -- CMD [ARGS...]

Campaign to lead the election N on a majority of the nodes, waiting in line
(first come, first served) until leading; then run CMD while leading, as
quorumlock run runs it under a lock, and resign when CMD and every process
of its group have exited, handing over at once to the next campaigner.
CMD runs with $QUORUMLOCK_KEY (N), $QUORUMLOCK_TERM and $QUORUMLOCK_TOKEN
(the term: larger for every later leader of N; pass it to stores that
reject stale writers). quorumlock leader --name N shows V and the term.

If the leadership is lost (a majority of nodes unreachable past the lease),
CMD gets SIGTERM, SIGKILL after --grace, and quorumlock exits 77. Process
groups, signals, terminals and exit statuses are run's: see
'quorumlock help run'.

Flags:
{{flags}}
Exit status: CMD's; 75 (--conflict-exit-code) when not leading within
--wait; 77 the leadership was lost; 2 bad usage; 69, 76, 78, 125-127 as run.

Examples:
  quorumlock elect --name scheduler --value "$(hostname)" -- ./scheduler
  while true; do quorumlock elect --name scheduler -- ./scheduler; sleep 1; done
`

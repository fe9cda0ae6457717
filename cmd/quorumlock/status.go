package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// defaultStatusTimeout bounds each node's status query.
const defaultStatusTimeout = 500 * time.Millisecond

// A holderStatus is what one node says about one lock: a key's writer, or
// a permit of a semaphore.
type holderStatus struct {
	Addr      string `json:"addr"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Owner     string `json:"owner,omitempty"`  // the holder's owner value; empty when free
	TTLMillis int64  `json:"ttl_ms,omitempty"` // remaining lease (PTTL), when held
	Holds     int64  `json:"holds,omitempty"`  // the owner's holds (one per Lock, more when nested)
	Fence     int64  `json:"fence"`            // fencing counter: the last token this node issued
}

// A nodeStatus is what one node says about a key: its writer and readers.
type nodeStatus struct {
	holderStatus
	masterAge
	Readers int                 `json:"readers"` // readers whose lease has not ended on the node's clock
	readers []string            // their members
	start   redlock.MasterStart // what it said of its start
	record  time.Duration       // the longest TTL record of the locks it holds
	limit   int                 // without --limit: the limit recorded for a semaphore of the name; 0 if none
}

// An agreement is the owner that most nodes hold a lock for, and whether
// they are a majority.
type agreement struct {
	Owner   string   `json:"owner,omitempty"` // the owner held on most nodes
	Holders int      `json:"holders"`         // nodes that hold Owner
	Held    tristate `json:"held"`            // Holders ≥ a majority; unknown if no majority answered and fewer hold it
	State   string   `json:"state"`           // held, shared, not held, free or unknown
}

// A lockStatus is the view of one key over all nodes.
type lockStatus struct {
	Key        string       `json:"key"`
	LockKey    string       `json:"lock_key"`
	FenceKey   string       `json:"fence_key"`
	ReadersKey string       `json:"readers_key"`
	Nodes      []nodeStatus `json:"nodes"`
	Need       int          `json:"need"`      // a majority of the nodes (quorum.Majority)
	Reachable  int          `json:"reachable"` // nodes that answered
	agreement               // on the writer
	Readers    count        `json:"readers"`             // readers live on a majority of nodes; unknown if no majority answered
	Guard      *guardStatus `json:"restart_guard"`       // the masters' age against the restart guard
	Semaphore  *semaphore   `json:"semaphore,omitempty"` // with --limit, or when the nodes record a limit for the name
}

// statusFlags are status's flags.
type statusFlags struct {
	target
	guardSetting // --ttl and --restart-guard: the run whose guard status shows
	json         bool
	timeout      time.Duration
	limit        int
}

func (c *cli) status(args []string) int {
	fs := newFlagSet("status")
	var f statusFlags
	f.target.register(fs, c.getenv, "the lock's `name` (required)")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	fs.DurationVar(&f.timeout, "timeout", defaultStatusTimeout, "timeout of the query to each node")
	fs.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL, "show the restart guard that a run with this --ttl meets")
	fs.DurationVar(&f.guard, "restart-guard", 0, "show the restart guard that a run with this --restart-guard meets (default: run's default guard)")
	fs.IntVar(&f.limit, "limit", 0, fmt.Sprintf("also show the `N` permits of --key's semaphore (1 to %d), as run --limit N holds them", redlock.MaxLimit))
	if code, ok := c.parse(fs, statusUsage, args); !ok {
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
	st, err := query(context.Background(), ns, &f)
	if err != nil { // a key or prefix the library refuses
		return c.usageError(fs, err)
	}
	if f.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(st)
	} else {
		err = printStatus(c.stdout, st)
	}
	switch {
	case err != nil:
		fmt.Fprintf(c.stderr, "quorumlock status: %v\n", err)
		return exitInternal
	case st.Reachable < st.Need:
		fmt.Fprintf(c.stderr, "quorumlock status: only %d of %d nodes answered, a majority is %d\n",
			st.Reachable, len(st.Nodes), st.Need)
		return exitUnavailable
	}
	return exitOK
}

// check validates the flags that fs parsed and returns the node addresses.
func (f *statusFlags) check(fs *flag.FlagSet) ([]string, error) {
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	f.guardSet = given["restart-guard"]
	if given["limit"] && (f.limit < 1 || f.limit > redlock.MaxLimit) {
		return nil, fmt.Errorf("--limit %d must be in [1, %d]", f.limit, redlock.MaxLimit)
	}
	addrs, err := f.target.check()
	if err != nil {
		return nil, err
	}
	if f.guard < 0 {
		return nil, fmt.Errorf("--restart-guard %v must not be negative", f.guard)
	}
	return addrs, errors.Join(positive("timeout", f.timeout), atMost("timeout", f.timeout, redlock.MaxDuration),
		positive("ttl", f.ttl), atMost("ttl", f.ttl, maxTTL), atMost("restart-guard", f.guard, redlock.MaxDuration))
}

var statusUsage = `Usage: quorumlock status --nodes host:port,... --key K [--limit N] [--json]

Show what each node holds for lock K: the writer's owner value, its remaining
TTL, its number of holds and the fencing counter (the last token the node
issued); the readers whose lease has not ended (run --read); whether the
node answered; and whether a majority of nodes holds the same owner, which
is when the lock is held. Readers count as holding K when a majority of
nodes has them (the key is then "shared"). When fewer than a majority
answered, whether K is held and how many read it is "unknown" (in --json,
held and readers are then the string "unknown").

It also shows each master's uptime (UP) against the restart guard that a
run with the same --ttl and --restart-guard meets, whether 'quorumlock
trust' vouched for it (GUARD: counts, vouched, or how long until it
counts), and when a majority of masters will count for a new lock: the
library's own computation (redlock.ViewRestartGuard), which run's exit
status 76 reports too. Without --restart-guard, that is run's default
guard: the longest TTL in use on the key (its locks' TTL records), at least
--ttl, at most ` + redlock.MaxRestartGuard.String() + ` unless --ttl is longer — and ` + redlock.MaxRestartGuard.String() + ` (or --ttl, if
longer) while no master has been up that long or is vouched for.

With --limit N, also show the semaphore of name K that run --limit N
holds: the limit its holders were granted with and the waiters in line on
each node, then for each permit 0 to N-1 each node's owner, TTL, holds and
fencing counter, and whether a majority holds the permit. Without --limit,
status reads the limit recorded for a semaphore of name K on the nodes,
and if there is one shows its permits the same way (in --json,
semaphore.detected is true): permits of K held by run --limit are never
shown as a free K; the verdict line then says how many are held.

Each node is queried in one round trip, all in parallel, under --timeout.
A node of a Redis Cluster (redis_mode:cluster) is asked again where K
lives: on the primary that serves K's slot, whose address the NODE column
adds ("host:port (cluster primary p)"), with that primary's uptime and its
slot's vouch.

Flags:
{{flags}}
Exit status:
  0    a majority of nodes answered (the lock may be held or free)
  2    bad flags or arguments
  69   fewer than a majority of nodes answered (EX_UNAVAILABLE)

Examples:
  quorumlock status --nodes r1:6379,r2:6379,r3:6379 --key nightly-report
  quorumlock status --key nightly-report --json | jq .held

  # Who reads the schema now (run --key schema --read)?
  quorumlock status --key schema --json | jq .readers

  # Which of the four encoder permits are taken, and how many wait?
  quorumlock status --key encoder --limit 4
  quorumlock status --key encoder --limit 4 --json | jq '.semaphore.held, .semaphore.nodes[].waiters'
`

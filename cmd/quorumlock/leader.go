package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// exitNoLeader is leader's exit status when nobody leads the election.
const exitNoLeader = 3

// leader prints who leads --name, as a majority of the nodes record it:
// one line, the term then the value; with --watch, then each new leader,
// until interrupted.
func (c *cli) leader(args []string) int {
	fs := newFlagSet("leader")
	var t target
	t.register(fs, c.getenv, "")
	name := fs.String("name", "", "the election's `name` (required)")
	watch := fs.Bool("watch", false, "then print each new leader, until interrupted (SIGINT, SIGTERM)")
	timeout := fs.Duration("node-timeout", redlock.DefaultNodeTimeout, "timeout of every call to one node")
	if code, ok := c.parse(fs, leaderUsage, args); !ok {
		return code
	}
	addrs, err := t.addrs()
	switch {
	case err != nil:
	case *name == "":
		err = errors.New("--name is required")
	case fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	default:
		err = positive("node-timeout", *timeout)
	}
	if err != nil {
		return c.usageError(fs, err)
	}
	ns, err := dial(addrs)
	if err != nil {
		return c.usageError(fs, err)
	}
	members, closeMembers := ns.members(clusterProbe)
	client, err := redlock.New(members, redlock.WithNodeTimeout(*timeout), redlock.WithPrefix(t.prefix))
	if err != nil {
		closeMembers()
		ns.close()
		return c.usageError(fs, errors.New(ns.redact(err.Error())))
	}
	defer closeWithin(time.Now().Add(*timeout), client, ns, closeMembers)
	if *watch {
		return c.watchLeaders(client, *name)
	}
	ns.warm(context.Background(), warmTimeout)
	return c.printLeader(client, *name, *timeout)
}

// printLeader prints the leader of name, or says that nobody leads.
func (c *cli) printLeader(client *redlock.Client, name string, timeout time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), 4*timeout+time.Second)
	defer cancel()
	ld, err := client.Leader(ctx, name)
	switch {
	case errors.Is(err, redlock.ErrNoLeader):
		fmt.Fprintf(c.stderr, "quorumlock: nobody leads %q\n", name)
		return exitNoLeader
	case err != nil:
		fmt.Fprintf(c.stderr, "quorumlock: %v\n", oneLine(err))
		return exitInternal
	}
	fmt.Fprintf(c.stdout, "%d %s\n", ld.Term, ld.Value)
	return exitOK
}

// watchLeaders prints the leader of name, if any, then each new one, until
// SIGINT or SIGTERM.
func (c *cli) watchLeaders(client *redlock.Client, name string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	leaders, err := client.Observe(ctx, name)
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock: %v\n", oneLine(err))
		return exitInternal
	}
	for ld := range leaders {
		fmt.Fprintf(c.stdout, "%d %s\n", ld.Term, ld.Value)
	}
	return exitOK
}

const leaderUsage = `Usage: quorumlock leader --nodes host:port,... --name N [--watch]

Print who leads the election N (quorumlock elect, or Campaign in the
library), as a majority of the nodes record it with a live lease: one line,
the leader's term, a space, and its value. The term is larger for every
later leader of N.

With --watch, print the current leader (if any), then each new leader as
it takes over (announced by the nodes; every line's term larger than the
last), until interrupted (SIGINT, SIGTERM: exit 0). A time when nobody
leads prints nothing.

Flags:
{{flags}}
Exit status: 0 a leader printed (or --watch interrupted); 3 nobody leads N;
2 bad usage; 125 the nodes could not be asked.

Examples:
  quorumlock leader --name scheduler
  quorumlock leader --name scheduler --watch
`

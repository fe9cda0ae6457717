// Command quorumlock runs commands under a Redlock lock held by a majority of
// independent Redis masters — the distributed flock(1) — shows who holds a
// lock, and demonstrates the library on embedded nodes.
//
// Usage:
//
//	quorumlock run    --nodes host:port,... --key K [--read | --limit N] [flags] -- CMD [ARGS...]
//	quorumlock run    --nodes host:port,... --keys K1,K2,... [flags] -- CMD [ARGS...]
//	quorumlock status --nodes host:port,... --key K [--limit N] [--json]
//	quorumlock demo   [--nodes host:port,...] [flags]
//	quorumlock trust  --nodes host:port,...
//	quorumlock elect  --nodes host:port,... --name N [--value V] [flags] -- CMD [ARGS...]
//	quorumlock leader --nodes host:port,... --name N [--watch]
//	quorumlock doctor --nodes host:port,... [--json]
//	quorumlock report HISTORY.jsonl > run.html
//	quorumlock version
//
// Run "quorumlock help SUBCOMMAND" for the flags, examples and exit statuses
// of each subcommand.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Exit statuses of quorumlock itself. run otherwise exits with CMD's own
// status (128+N when CMD died of signal N), as a shell does, or dies of
// CMD's signal (SIGINT, SIGTERM, SIGHUP, SIGPIPE) once the lock is released.
const (
	exitOK           = 0
	exitFailure      = 1   // demo: a check failed (oversell, overlap, lost update)
	exitUsage        = 2   // bad flags or arguments, as Go's flag package and most Unix tools
	exitUnavailable  = 69  // EX_UNAVAILABLE: fewer than a majority of nodes answered
	exitTempFail     = 75  // EX_TEMPFAIL: the lock is held elsewhere; not obtained within --wait (--conflict-exit-code)
	exitRestartGuard = 76  // a majority of masters started within the restart guard: trust them, or wait
	exitLockLost     = 77  // EX_NOPERM: the lock was lost while CMD ran; CMD was stopped
	exitNodeError    = 78  // EX_CONFIG: nodes answered with errors (memory, replica, ACL): fix them
	exitInternal     = 125 // quorumlock failed otherwise (as env(1), timeout(1))
	exitNoExec       = 126 // CMD was found but could not be executed
	exitNotFound     = 127 // CMD was not found
)

// envNodes is the environment variable that provides the default of --nodes.
const envNodes = "QUORUMLOCK_NODES"

// A cli is one invocation: its standard streams and environment, so that
// tests can run subcommands in-process.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	verbose bool           // run -v
	log     *lockLog       // run's observer of its lock
	raise   syscall.Signal // run: the signal to die of once done, if any
}

func main() {
	if len(os.Args) > 0 && os.Args[0] == keeperName {
		os.Exit(keep(os.Args[1:]))
	}
	// Node errors reach the user through the lock's errors and the status
	// table; go-redis's own log lines would only repeat them.
	redis.SetLogger(quietLog{})
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	code := c.main(os.Args[1:])
	if c.raise != 0 {
		// Die of the signal that ended CMD, or the wait, as CMD would have
		// without quorumlock: the lock is released by now.
		dieOf(c.raise)
		time.Sleep(time.Second) // only if the signal does not kill at once
	}
	os.Exit(code)
}

// quietLog discards go-redis's log lines.
type quietLog struct{}

func (quietLog) Printf(context.Context, string, ...any) {}

// subcommands maps each subcommand to its entry point, which prints its
// usage itself on -h (help). Every subcommand is named here, none joins
// from an init function.
var subcommands = map[string]func(*cli, []string) int{
	"run":     (*cli).run,
	"status":  (*cli).status,
	"demo":    (*cli).demo,
	"trust":   (*cli).trust,
	"elect":   (*cli).elect,
	"leader":  (*cli).leader,
	"doctor":  (*cli).doctor,
	"report":  (*cli).drawReport,
	"version": (*cli).version,
}

// main runs the subcommand named by args[0] and returns the exit status.
func (c *cli) main(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, mainUsage)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		return c.help(rest)
	}
	sub, ok := subcommands[name]
	if !ok {
		fmt.Fprintf(c.stderr, "quorumlock: unknown subcommand %q\n\n%s", name, mainUsage)
		return exitUsage
	}
	return sub(c, rest)
}

// help prints the usage of the whole tool, or of one subcommand.
func (c *cli) help(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, mainUsage)
		return exitOK
	}
	sub, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(c.stderr, "quorumlock help: unknown subcommand %q\n\n%s", args[0], mainUsage)
		return exitUsage
	}
	return sub(c, []string{"-h"})
}

const mainUsage = `quorumlock: run commands under a lock held by a majority of Redis masters (Redlock).

Usage:
  quorumlock run    --nodes host:port,... --key K [--read | --limit N] [flags] -- CMD [ARGS...]
  quorumlock run    --nodes host:port,... --keys K1,K2,... [flags] -- CMD [ARGS...]
  quorumlock status --nodes host:port,... --key K [--limit N] [--json]
  quorumlock demo   [--nodes host:port,...] [flags]
  quorumlock trust  --nodes host:port,...
  quorumlock elect  --nodes host:port,... --name N [--value V] [flags] -- CMD [ARGS...]
  quorumlock leader --nodes host:port,... --name N [--watch]
  quorumlock doctor --nodes host:port,... [--json]
  quorumlock report HISTORY.jsonl > run.html
  quorumlock help   [SUBCOMMAND]
  quorumlock version

Subcommands:
  run      acquire the lock, run CMD while the lock is renewed, release it when
           CMD exits, and exit with CMD's status: a distributed flock(1); or
           several locks at once (--keys), a shared hold (--read), one of N
           permits (--limit N)
  status   show each node's holder, remaining TTL and fencing counter, and
           whether a majority agrees on one holder; the readers; with
           --limit N, the semaphore's permits and waiters
  demo     the oversell scenario: workers sell stock under the lock while a
           node is killed and restarted; five embedded nodes unless --nodes
  trust    vouch that new masters' processes have no lock to forget, so
           that locks need not wait out the restart guard after they start
  elect    campaign to lead an election, run CMD while leading ($QUORUMLOCK_TERM),
           resign when it exits
  leader   print who leads an election; with --watch, each new leader
  doctor   check that the masters are fit to hold locks: role, eviction,
           persistence, ACL, round trip, clock rate, restarts, count
  report   draw a history (demo --report, the chaos soak, history.Observer)
           as one self-contained HTML page of holds, tokens and faults
  version  print quorumlock's release and the go-redis and Go it was built with

Nodes are independent Redis masters (not replicas of one another), given as
host:port or redis:// URLs, comma-separated; $QUORUMLOCK_NODES is the default.

Examples:
  go run ./cmd/quorumlock demo
  export QUORUMLOCK_NODES=10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  quorumlock run --key nightly-report --wait 1m -- ./report.sh
  quorumlock status --key nightly-report

Run 'quorumlock help SUBCOMMAND' for the flags, examples and exit statuses.
`

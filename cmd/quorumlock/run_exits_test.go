package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Masters that all answer with an error are no lock held elsewhere: run
// exits 78 and says what to fix, never 75 (a cron wrapper's "skip").
func TestRunNodeErrorsAreNotHeldElsewhere(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, c redis.UniversalClient, addr string) string // returns the node's address for --nodes
		want  string
	}{
		{"out of memory", func(t *testing.T, c redis.UniversalClient, addr string) string {
			do(t, c, "CONFIG", "SET", "maxmemory", "1")
			t.Cleanup(func() { do(t, c, "CONFIG", "SET", "maxmemory", "0") })
			return addr
		}, "OOM"},
		{"ACL user without INFO", func(t *testing.T, c redis.UniversalClient, addr string) string {
			do(t, c, "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info")
			return "redis://noinfo:pw@" + addr
		}, "INFO"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lab, _ := startLab(t, 3)
			var addrs []string
			for i, c := range lab.Clients(t) {
				addrs = append(addrs, tc.setup(t, c, lab.Nodes[i].Addr()))
			}
			code, _, stderr := runBinary(t, "", runArgs(strings.Join(addrs, ","), "errors", "--", "true")...)
			if code != exitNodeError || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "fix") {
				t.Errorf("status %d, stderr %q; want %d naming %s and what to fix", code, stderr, exitNodeError, tc.want)
			}
			checkNodeNumbers(t, stderr, lab.Addrs())
		})
	}
}

func do(t *testing.T, c redis.UniversalClient, args ...any) {
	t.Helper()
	if err := c.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// Brand-new masters, not vouched for: run says to trust them or wait (for
// MaxRestartGuard: none of them can report the TTLs in use), with an exit
// status of its own.
func TestRunRestartGuardSaysWhatToDo(t *testing.T) {
	lab := redislab.Start(t, 3) // not vouched for
	nodes := strings.Join(lab.Addrs(), ",")
	code, _, stderr := runBinary(t, "", runArgs(nodes, "new", "--", "true")...)
	if code != exitRestartGuard || !strings.Contains(stderr, "quorumlock trust") || !strings.Contains(stderr, "wait") {
		t.Errorf("status %d, stderr %q; want %d, naming quorumlock trust and a wait", code, stderr, exitRestartGuard)
	}
	// No master is old enough to report the TTLs in use: the library waits
	// MaxRestartGuard, and so does the advice.
	if want := "restart guard (" + redlock.MaxRestartGuard.String() + ")"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q; want it to name %q", stderr, want)
	}
	if code, _, stderr := runBinary(t, "", runArgs(nodes, "new", "--restart-guard", "0", "--", "true")...); code != 0 {
		t.Errorf("--restart-guard 0: status %d, want 0; stderr:\n%s", code, stderr)
	}
}

func TestRunConflictExitCodeAndCommandChecks(t *testing.T) {
	lab, nodes := startLab(t, 3)
	holdLock(t, lab, "busy")
	script := filepath.Join(t.TempDir(), "no-shebang")
	if err := os.WriteFile(script, []byte("exit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"--conflict-exit-code", runArgs(nodes, "busy", "--conflict-exit-code", "9", "--", "true"), 9},
		{"-E", runArgs(nodes, "busy", "-E", "9", "--", "true"), 9},
		{"missing command while held", runArgs(nodes, "busy", "--", "quorumlock-no-such-command"), exitNotFound},
		{"script without a shebang", runArgs(nodes, "free", "--", script), 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := runBinary(t, "", tc.args...); code != tc.want {
				t.Errorf("status %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
		})
	}
}

// --wait is a bound, whatever the masters do: a run gives up within --wait
// plus the node timeout, with a one-line message. The run is timed in this
// process: a binary's start and exit, which --wait does not bound, took
// seconds of a 2 s slack on a loaded machine (and the first run of a test
// binary built quorumlock inside the timing).
func TestRunWaitIsABoundWithHungMasters(t *testing.T) {
	lab, nodes := startLab(t, 5)
	lab.RequireControl(t)
	holdLock(t, lab, "hung")
	// run's probe of each node (clusterProbe: a hung node is taken for a
	// plain master after it), and a loaded machine's scheduling.
	const slack = clusterProbe + time.Second
	cases := []struct {
		name   string
		paused []int
		wait   time.Duration
		want   int
	}{
		{"one master of five hung", []int{4}, 200 * time.Millisecond, exitTempFail},
		{"a hung majority", []int{2, 3, 4}, time.Second, exitUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lab.Pause(t, tc.paused...)
			defer lab.Resume(t, tc.paused...)
			const nodeTimeout = 100 * time.Millisecond
			begin := time.Now()
			code, _, stderr := inProcess(append(runArgs(nodes, "hung", "--wait", tc.wait.String()),
				"--node-timeout", nodeTimeout.String(), "--", "true")...)
			took := time.Since(begin)
			if bound := tc.wait + nodeTimeout + slack; code != tc.want || took > bound {
				t.Errorf("status %d after %v; want %d within %v; stderr:\n%s", code, took, tc.want, bound, stderr)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 {
				t.Errorf("the --wait expiry message has %d lines, want one:\n%s", lines, stderr)
			}
		})
	}
}

// No credential is ever printed: not by run's bad-address error, run's
// node errors, the status table, status --json, or trust.
func TestNoCommandPrintsPasswords(t *testing.T) {
	lab, _ := startLab(t, 3)
	const secret = "s3cretPW"
	var withPW []string
	for _, a := range lab.Addrs() {
		withPW = append(withPW, "redis://user:"+secret+"@"+a)
	}
	nodes := strings.Join(withPW, ",")
	cases := [][]string{
		{"run", "--nodes", "redis://:" + secret + "@127.0.0.1:notaport", "--key", "k", "--", "true"},
		runArgs(nodes, "k", "--", "true"),
		{"status", "--nodes", nodes, "--key", "k"},
		{"status", "--nodes", nodes, "--key", "k", "--json"},
		{"trust", "--nodes", nodes},
	}
	for _, args := range cases {
		code, stdout, stderr := runBinary(t, "", args...)
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("%s (status %d) printed the password:\n%s%s", args[0], code, stdout, stderr)
		}
		if code == 0 {
			t.Errorf("%v: status 0 with a wrong password", args)
		}
	}
}

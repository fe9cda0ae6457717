package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// startLab starts n masters and returns them with their --nodes value.
func startLab(t *testing.T, n int) (*redislab.Lab, string) {
	t.Helper()
	lab := redislab.Start(t, n)
	lab.Trust(t, redlock.TrustStart)
	return lab, strings.Join(lab.Addrs(), ",")
}

// owners returns each node's owner of key's lock ("" when free).
func owners(t *testing.T, lab *redislab.Lab, key string) []string {
	t.Helper()
	return testkit.Owners(t, lab.Clients(t), redlock.Keys(redlock.DefaultPrefix, key).Lock)
}

// runArgs starts the arguments of a run on nodes, with a node timeout that
// the lab meets on a loaded machine: a single attempt must not fail for it.
func runArgs(nodes, key string, more ...string) []string {
	return append([]string{"run", "--nodes", nodes, "--key", key, "--node-timeout", "200ms"}, more...)
}

func TestRunExitStatus(t *testing.T) {
	lab, nodes := startLab(t, 3)
	cases := []struct {
		name string
		argv []string
		want int
	}{
		{"success", []string{"true"}, 0},
		{"failure", []string{"sh", "-c", "exit 7"}, 7},
		{"killed by a signal", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9},
		{"not found", []string{"quorumlock-no-such-command"}, exitNotFound},
		{"not executable", []string{"/dev/null"}, exitNoExec},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("exit-%d", i)
			args := append(runArgs(nodes, key, "--"), tc.argv...)
			code, _, stderr := runBinary(t, "", args...)
			if code != tc.want {
				t.Errorf("exit status = %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
			if got := owners(t, lab, key); strings.Join(got, "") != "" {
				t.Errorf("lock left on the nodes after run: owners %q", got)
			}
		})
	}
}

func TestRunPassesStdioAndEnvironment(t *testing.T) {
	_, nodes := startLab(t, 3)
	code, stdout, stderr := runBinary(t, "hello\n", runArgs(nodes, "stdio", "--",
		"sh", "-c", `cat; echo "key=$QUORUMLOCK_KEY token=$QUORUMLOCK_TOKEN" >&2`)...)
	if code != 0 || stdout != "hello\n" {
		t.Fatalf("status %d, stdout %q; want 0, %q; stderr:\n%s", code, stdout, "hello\n", stderr)
	}
	if !regexp.MustCompile(`key=stdio token=[1-9][0-9]*\n`).MatchString(stderr) {
		t.Errorf("stderr %q lacks the key and a positive token", stderr)
	}
}

// commandCalls returns how many scripts and PINGs node c has run so far.
func commandCalls(t *testing.T, c redis.UniversalClient) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`cmdstat_(?:evalsha|eval|ping):calls=(\d+)`).FindAllStringSubmatch(info, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// holdLock takes key on lab's nodes without renewals, so that the nodes see
// no calls but those of the process under test.
func holdLock(t *testing.T, lab *redislab.Lab, key string) *redlock.Lock {
	t.Helper()
	// A generous node timeout: every node grants, even on a loaded machine.
	c := testkit.Open(t, redlock.New, lab.Clients(t), redlock.WithTTL(time.Minute), redlock.WithAutoRenew(false),
		redlock.WithNodeTimeout(time.Second))
	l, err := c.Lock(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestRunWhileHeld(t *testing.T) {
	lab, nodes := startLab(t, 3)
	l := holdLock(t, lab, "held")
	run := runArgs(nodes, "held")

	t.Run("single attempt", func(t *testing.T) {
		code, _, stderr := runBinary(t, "", append(run, "--", "true")...)
		if code != exitTempFail || !strings.Contains(stderr, "not obtained") {
			t.Errorf("status %d, stderr %q; want %d and a reason", code, stderr, exitTempFail)
		}
	})
	t.Run("gives up after --wait", func(t *testing.T) {
		begin := time.Now()
		code, _, stderr := runBinary(t, "", append(run, "--wait", "300ms", "--", "true")...)
		if took := time.Since(begin); code != exitTempFail || took < 300*time.Millisecond {
			t.Errorf("status %d after %v, want %d after 300ms at least; stderr:\n%s", code, took, exitTempFail, stderr)
		}
	})
	t.Run("interrupted while waiting", func(t *testing.T) {
		p := startWaiter(t, lab, append(run, "--wait", "30s", "--", "true"))
		p.cmd.Process.Signal(os.Interrupt)
		p.wait(t, 10*time.Second)
		// It dies of SIGINT, as the command would have: a shell loop stops.
		if ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Errorf("ended with %v, want to die of SIGINT; stderr:\n%s", p.cmd.ProcessState, p.stderr.String())
		}
	})
	t.Run("runs once released", func(t *testing.T) {
		p := startWaiter(t, lab, append(run, "--wait", "30s", "--", "echo", "ran"))
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 10*time.Second); code != 0 || p.stdout.String() != "ran\n" {
			t.Errorf("status %d, stdout %q; want 0, %q; stderr:\n%s", code, p.stdout.String(), "ran\n", p.stderr.String())
		}
	})
}

// startWaiter starts run with args and returns once it has made at least
// one attempt on the first node, while the lock is held.
func startWaiter(t *testing.T, lab *redislab.Lab, args []string) *proc {
	t.Helper()
	node := lab.Clients(t)[0]
	before := commandCalls(t, node)
	p := start(t, "", args...)
	testkit.Eventually(t, 10*time.Second, "the waiter's first attempt", func() bool {
		return commandCalls(t, node) > before+1 // its PING, then an attempt
	})
	select {
	case <-p.exited:
		t.Fatalf("run exited while the lock was held; stderr:\n%s", p.stderr.String())
	default:
	}
	return p
}

func TestRunUnavailable(t *testing.T) {
	lab, nodes := startLab(t, 3)
	lab.RequireControl(t)
	lab.Kill(t, 1, 2)
	for _, wait := range []string{"0s", "300ms"} {
		code, _, stderr := runBinary(t, "", runArgs(nodes, "down", "--wait", wait, "--", "true")...)
		if code != exitUnavailable || !strings.Contains(stderr, "not obtained") {
			t.Errorf("--wait %s: status %d, stderr %q; want %d", wait, code, stderr, exitUnavailable)
		}
	}
}

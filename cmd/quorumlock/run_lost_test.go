package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// loopScript prints its background child's pid and "started", then loops
// until stopped; trap is its SIGTERM handling.
func loopScript(trap string) string {
	return trap + `; sleep 30 & echo "bg=$!"; echo started; while :; do sleep 0.05; done`
}

// setsidScript is loopScript whose background child leaves the command's
// process group (setsid, in a new session): its pid is printed as bg=.
func setsidScript(trap string) string {
	return trap + `; setsid sleep 30 & echo "bg=$!"; echo started; while :; do sleep 0.05; done`
}

func TestRunLockLost(t *testing.T) {
	cases := []struct {
		name, trap, grace, stdout string
		script                    func(string) string
	}{
		{"command exits on SIGTERM", `trap 'echo got-term; exit 3' TERM`, "10s", "got-term", loopScript},
		{"command killed after the grace period", `trap '' TERM`, "200ms", "", loopScript},
		// The group exits at once on SIGTERM, well within the grace period;
		// its setsid child, outside the group, must die all the same (it
		// outlived the lock before).
		{"process out of the group after the group exits", `trap 'echo got-term; exit 3' TERM`, "10s", "got-term", setsidScript},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lab, nodes := startLab(t, 3)
			lab.RequireControl(t)
			p := start(t, "", runArgs(nodes, "lost", "--ttl", "1s", "--grace", tc.grace,
				"--", "sh", "-c", tc.script(tc.trap))...)
			testkit.Eventually(t, 10*time.Second, "the command to start", func() bool {
				return strings.Contains(p.stdout.String(), "started")
			})
			lab.Kill(t, 0, 1) // a majority of three
			if code := p.wait(t, 15*time.Second); code != exitLockLost {
				t.Fatalf("status %d, want %d; stderr:\n%s", code, exitLockLost, p.stderr.String())
			}
			if !strings.Contains(p.stdout.String(), tc.stdout) || !strings.Contains(p.stderr.String(), "lost") {
				t.Errorf("stdout %q lacks %q, or stderr %q does not report the loss", p.stdout.String(), tc.stdout, p.stderr.String())
			}
			bg := backgroundPid(t, p.stdout.String())
			testkit.Eventually(t, 5*time.Second, fmt.Sprintf("the command's background process %d to die", bg), func() bool {
				return !alive(bg)
			})
		})
	}
}

func TestRunForwardsSignals(t *testing.T) {
	_, nodes := startLab(t, 3)
	p := start(t, "", runArgs(nodes, "signals", "--", "sh", "-c", loopScript(`trap 'echo got-term; exit 5' TERM`))...)
	testkit.Eventually(t, 10*time.Second, "the command to start", func() bool {
		return strings.Contains(p.stdout.String(), "started")
	})
	// sh prints bg= once it forked the job: a SIGTERM before the job's exec
	// lands in sh's trap inherited by the child, and is lost at its exec.
	bg := backgroundPid(t, p.stdout.String())
	testkit.Eventually(t, 10*time.Second, "the background job to run sleep", func() bool { return commOf(bg) == "sleep" })
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 10*time.Second); code != 5 || !strings.Contains(p.stdout.String(), "got-term") {
		t.Errorf("status %d, stdout %q; want 5 and got-term; stderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
	syscall.Kill(bg, syscall.SIGKILL)
}

// commOf returns the command name of process pid (/proc/PID/comm), or ""
// once it is gone.
func commOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func backgroundPid(t *testing.T, stdout string) int {
	t.Helper()
	m := regexp.MustCompile(`bg=(\d+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no bg= line in %q", stdout)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// alive reports whether pid runs: it exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: a zombie counts as alive
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

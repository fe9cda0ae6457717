package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// lingerScript starts a background job that prints "job-ready" and runs
// until the file gate exists, prints its pid and its own as bg=PID
// sh=PID, then "started", and then does tail. The job's "job-ready" comes
// once sh set it up (SIGINT ignored): "started" may come before the job
// ran at all on a busy machine.
func lingerScript(gate, tail string) string {
	return `(echo job-ready; until [ -e '` + gate + `' ]; do sleep 0.02; done) & echo "bg=$! sh=$$"; echo started; ` + tail
}

// The lock lives while any process of the command's group lives, as with
// flock(1), whose background jobs keep the lock's file open.
func TestRunHoldsTheLockWhileTheGroupLives(t *testing.T) {
	lab, nodes := startLab(t, 3)
	cases := []struct {
		name, tail string
		interrupt  bool // SIGINT to quorumlock once started
	}{
		{"the command exits", "exit 0", false},
		// A non-interactive sh starts background jobs with SIGINT ignored.
		{"after Ctrl-C", "wait", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "gate")
			p := start(t, "", runArgs(nodes, "linger", "--", "sh", "-c", lingerScript(gate, tc.tail))...)
			testkit.Eventually(t, 10*time.Second, "the command and its background job to start", func() bool {
				out := p.stdout.String()
				return strings.Contains(out, "started") && strings.Contains(out, "job-ready")
			})
			if tc.interrupt {
				p.cmd.Process.Signal(os.Interrupt)
				sh := pidOf(t, p.stdout.String(), "sh")
				testkit.Eventually(t, 10*time.Second, "sh to die of SIGINT", func() bool { return !alive(sh) })
			}
			bg := backgroundPid(t, p.stdout.String())
			if code, _, stderr := runBinary(t, "", runArgs(nodes, "linger", "--", "true")...); code != exitTempFail {
				t.Errorf("another run while the background job %d (alive %v) runs: status %d, want %d; stderr:\n%s",
					bg, alive(bg), code, exitTempFail, stderr)
			}
			select {
			case <-p.exited:
				t.Errorf("quorumlock exited while its command's background job ran; stderr:\n%s", p.stderr.String())
			default:
			}
			os.WriteFile(gate, nil, 0o644)
			p.wait(t, 10*time.Second)
			ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if tc.interrupt && (!ws.Signaled() || ws.Signal() != syscall.SIGINT) {
				t.Errorf("after Ctrl-C quorumlock ended with %v, want to die of SIGINT as its command did", p.cmd.ProcessState)
			}
			if got := owners(t, lab, "linger"); strings.Join(got, "") != "" {
				t.Errorf("lock left on the nodes once the group ended: owners %q", got)
			}
		})
	}
}

func TestRunKillGroupEndsTheBackgroundJobs(t *testing.T) {
	lab, nodes := startLab(t, 3)
	gate := filepath.Join(t.TempDir(), "gate") // never opened
	code, stdout, stderr := runBinary(t, "", runArgs(nodes, "kill-group", "--kill-group", "--grace", "200ms",
		"--", "sh", "-c", lingerScript(gate, "exit 3"))...)
	if code != 3 {
		t.Fatalf("status %d, want the command's 3; stderr:\n%s", code, stderr)
	}
	if bg := backgroundPid(t, stdout); alive(bg) {
		t.Errorf("background job %d still runs after run --kill-group exited", bg)
	}
	if got := owners(t, lab, "kill-group"); strings.Join(got, "") != "" {
		t.Errorf("lock left on the nodes: owners %q", got)
	}
}

// kill -9 of quorumlock stops the command's whole group at once, long
// before the lease it no longer renews can end.
func TestRunKilledStopsTheWholeGroup(t *testing.T) {
	_, nodes := startLab(t, 3)
	p := start(t, "", runArgs(nodes, "killed", "--ttl", "30s",
		"--", "sh", "-c", `sh -c 'while :; do sleep 0.05; done' & echo "bg=$!"; echo started; wait`)...)
	testkit.Eventually(t, 10*time.Second, "the command to start", func() bool {
		return strings.Contains(p.stdout.String(), "started")
	})
	bg := backgroundPid(t, p.stdout.String())
	t.Cleanup(func() { syscall.Kill(bg, syscall.SIGKILL) })
	p.cmd.Process.Kill()
	testkit.Eventually(t, 5*time.Second, "the command's grandchild to die with quorumlock", func() bool {
		return !alive(bg)
	})
}

func TestRunForwardsSIGQUIT(t *testing.T) {
	_, nodes := startLab(t, 3)
	p := start(t, "", runArgs(nodes, "quit", "--", "sh", "-c", `trap 'echo got-quit; exit 4' QUIT; echo started; while :; do sleep 0.05; done`)...)
	testkit.Eventually(t, 10*time.Second, "the command to start", func() bool {
		return strings.Contains(p.stdout.String(), "started")
	})
	p.cmd.Process.Signal(syscall.SIGQUIT)
	if code := p.wait(t, 10*time.Second); code != 4 || strings.Contains(p.stderr.String(), "goroutine") {
		t.Errorf("status %d, want the command's 4, and no stack dump; stdout %q, stderr:\n%s", code, p.stdout.String(), p.stderr.String())
	}
}

// pidOf returns the pid printed as name=PID in stdout.
func pidOf(t *testing.T, stdout, name string) int {
	t.Helper()
	m := regexp.MustCompile(name + `=(\d+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no %s= in %q", name, stdout)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

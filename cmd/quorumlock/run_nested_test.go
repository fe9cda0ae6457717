package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// heartbeatScript ignores SIGTERM, prints its pid as cmd=PID and "started",
// then appends a line to beat every 20ms for as long as it lives.
func heartbeatScript(beat string) string {
	return `trap '' TERM; echo "cmd=$$"; echo started; while :; do echo x >> '` + beat + `'; sleep 0.02; done`
}

// overlapScript, run under the lock the heartbeat's run held, reports
// "overlap" if the heartbeat still beats while it holds the lock, then "got".
func overlapScript(beat string) string {
	return `a=$(wc -c < '` + beat + `'); sleep 0.3; b=$(wc -c < '` + beat + `'); ` +
		`[ "$a" = "$b" ] || echo overlap; echo got`
}

// A run inside a run: every process started under the outer run, in
// whatever process group — the inner run's command has its own — is dead
// before anyone else can take the inner lock, whether the outer quorumlock
// is killed with kill -9 or loses its lock while the inner command ignores
// SIGTERM.
func TestRunNestedCommandDiesWithTheOuterRun(t *testing.T) {
	cases := []struct {
		name string
		end  func(t *testing.T, outer *proc, stopOuterLab func())
		want int // the outer quorumlock's status, -1 when killed
	}{
		{"kill -9 of the outer quorumlock", func(t *testing.T, outer *proc, _ func()) {
			outer.cmd.Process.Kill()
		}, -1},
		{"the outer lock is lost", func(t *testing.T, outer *proc, stopOuterLab func()) {
			stopOuterLab()
		}, exitLockLost},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outerLab, outerNodes := startLab(t, 3)
			outerLab.RequireControl(t)
			_, innerNodes := startLab(t, 3)
			beat := filepath.Join(t.TempDir(), "beat")
			inner := append([]string{binary(t)}, runArgs(innerNodes, "inner", "--ttl", "2s", "--wait", "10s",
				"--", "sh", "-c", heartbeatScript(beat))...)
			outer := start(t, "", runArgs(outerNodes, "outer",
				append([]string{"--ttl", "1s", "--grace", "200ms", "--wait", "10s", "--"}, inner...)...)...)
			testkit.Eventually(t, 20*time.Second, "the inner command to start", func() bool {
				if outerEnded(outer) {
					t.Fatalf("the outer run ended: %v; stderr:\n%s", outer.cmd.ProcessState, outer.stderr.String())
				}
				return strings.Contains(outer.stdout.String(), "started")
			})
			cmd := pidOf(t, outer.stdout.String(), "cmd")
			t.Cleanup(func() { syscall.Kill(cmd, syscall.SIGKILL) })

			tc.end(t, outer, func() { outerLab.Kill(t, 0, 1) })
			if code := outer.wait(t, 15*time.Second); code != tc.want {
				t.Errorf("outer quorumlock: status %d, want %d; stderr:\n%s", code, tc.want, outer.stderr.String())
			}
			code, stdout, stderr := runBinary(t, "", runArgs(innerNodes, "inner", "--wait", "20s",
				"--", "sh", "-c", overlapScript(beat))...)
			if code != 0 || !strings.Contains(stdout, "got") {
				t.Fatalf("another run of inner: status %d, stdout %q; stderr:\n%s", code, stdout, stderr)
			}
			if strings.Contains(stdout, "overlap") || alive(cmd) {
				t.Errorf("the inner command %d (alive %v) still ran while another run held inner", cmd, alive(cmd))
			}
		})
	}
}

// kill -9 of quorumlock kills every process started under the run, also
// one that left the command's group, and also when it is sent to
// quorumlock's whole process group (a shell's kill -9 %1), which does not
// hold the keeper.
func TestRunKilledKillsEverythingUnderIt(t *testing.T) {
	_, nodes := startLab(t, 3)
	loop := `while :; do sleep 0.05; done`
	cases := []struct {
		name, bg string
		group    bool // kill -9 of quorumlock's process group, not its pid
	}{
		{"quorumlock's process group", `sh -c '` + loop + `'`, true},
		{"a process that left the command's group", `setsid sh -c '` + loop + `'`, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := startWith(t, &syscall.SysProcAttr{Setpgid: true}, nil, nil,
				runArgs(nodes, fmt.Sprintf("killed-%d", i), "--ttl", "30s",
					"--", "sh", "-c", tc.bg+` & echo "bg=$!"; echo started; wait`)...)
			testkit.Eventually(t, 10*time.Second, "the command to start", func() bool {
				return strings.Contains(p.stdout.String(), "started")
			})
			bg := backgroundPid(t, p.stdout.String())
			t.Cleanup(func() { syscall.Kill(bg, syscall.SIGKILL) })
			if tc.group {
				syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			} else {
				p.cmd.Process.Kill()
			}
			testkit.Eventually(t, 5*time.Second, fmt.Sprintf("the background process %d to die", bg), func() bool {
				return !alive(bg)
			})
		})
	}
}

// outerEnded reports whether p has exited.
func outerEnded(p *proc) bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
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

// outerEnded reports whether p has exited.
func outerEnded(p *proc) bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// startPiped starts the binary with args like start, but with stdout and
// stderr the given files (nil: a test buffer), closed here once started.
func startPiped(t *testing.T, stdout, stderr *os.File, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary(t), args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	if stderr != nil {
		p.cmd.Stderr = stderr
	}
	p.cmd.WaitDelay = time.Second
	p.cmd.Env = append(os.Environ(), envNodes+"=", "GORACE=atexit_sleep_ms=50")
	err := p.cmd.Start()
	for _, f := range []*os.File{stdout, stderr} {
		if f != nil {
			f.Close()
		}
	}
	if err != nil {
		t.Fatalf("start quorumlock: %v", err)
	}
	go func() {
		defer close(p.exited)
		p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// -v whose stderr reader went away: the log lines are lost, never the run.
// The command finishes, the lock is released at once, the status is the
// command's.
func TestRunVerboseSurvivesAClosedStderr(t *testing.T) {
	lab, nodes := startLab(t, 3)
	done := filepath.Join(t.TempDir(), "done")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // before quorumlock writes anything: every line of -v meets EPIPE
	// The command writes nothing to stderr: it would die of SIGPIPE itself.
	// It runs past the first renewal (at 1s), which -v logs.
	p := startPiped(t, nil, w, runArgs(nodes, "closed-stderr", "-v", "--ttl", "3s", "--wait", "10s",
		"--", "sh", "-c", fmt.Sprintf(`sleep 2; echo > '%s'; exit 3`, done))...)
	if code := p.wait(t, 15*time.Second); code != 3 {
		t.Errorf("status %v, want the command's 3", p.cmd.ProcessState)
	}
	if _, err := os.Stat(done); err != nil {
		t.Errorf("the command did not finish: %v", err)
	}
	if got := owners(t, lab, "closed-stderr"); strings.Join(got, "") != "" {
		t.Errorf("lock left on the nodes after run: owners %q", got)
	}
}

// run -- yes | head -c4: yes dies of SIGPIPE, and quorumlock, once it has
// released the lock, dies of SIGPIPE too, as yes would without it, at once.
func TestRunDiesOfSIGPIPELikeItsCommand(t *testing.T) {
	lab, nodes := startLab(t, 3)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := startPiped(t, w, nil, runArgs(nodes, "sigpipe", "--", "yes")...)
	if _, err := io.ReadFull(r, make([]byte, 4)); err != nil {
		t.Fatalf("read yes's output: %v; stderr:\n%s", err, p.stderr.String())
	}
	r.Close() // head -c4 exits
	begin := time.Now()
	p.wait(t, 15*time.Second)
	took := time.Since(begin)
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Errorf("quorumlock ended with %v after %v, want to die of SIGPIPE as yes did; stderr:\n%s",
			p.cmd.ProcessState, took, p.stderr.String())
	}
	t.Logf("quorumlock died %v after its reader closed", took)
	if got := owners(t, lab, "sigpipe"); strings.Join(got, "") != "" {
		t.Errorf("lock left on the nodes after run: owners %q", got)
	}
}

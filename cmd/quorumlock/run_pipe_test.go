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
)

// startPiped starts the binary with args like start, but with stdout and
// stderr the given files (nil: a test buffer), closed here once started.
func startPiped(t *testing.T, stdout, stderr *os.File, args ...string) *proc {
	t.Helper()
	return startWith(t, nil, stdout, stderr, args...)
}

// startWith is startPiped with the process attributes attr.
func startWith(t *testing.T, attr *syscall.SysProcAttr, stdout, stderr *os.File, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary(t), args...), exited: make(chan struct{})}
	p.cmd.SysProcAttr = attr
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

//go:build linux

package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// The command lines typed below quote their markers ("na""me") so that the
// terminal's echo of the line never shows what only the output may.

func TestRunGivesTheCommandTheTerminal(t *testing.T) {
	_, nodes := startLab(t, 3)
	sh := startShell(t)
	sh.typeIn(t, fmt.Sprintf(`quorumlock run --nodes %s --key tty --node-timeout 200ms -- sh -c 'printf "na""me? "; read x; echo "got-$x"'; echo "st""atus=$?"`+"\n", nodes))
	sh.await(t, 20*time.Second, "name? ")
	sh.typeIn(t, "alice\n")
	sh.await(t, 10*time.Second, "got-alice")
	sh.await(t, 10*time.Second, "status=0")
}

func TestRunCtrlCStopsABashLoop(t *testing.T) {
	lab, nodes := startLab(t, 3)
	sh := startShell(t)
	// Each command waits without forking (see ticker): a Ctrl-C typed as
	// soon as "iter-1" showed, while sh -c '...; sleep 30' was forking its
	// sleep, was lost now and then — neither sh nor sleep died of it.
	sh.typeIn(t, fmt.Sprintf(`for i in 1 2 3; do quorumlock run --nodes %s --key loop --node-timeout 200ms -- bash -c 'echo "it""er-$1"; exec 9<>"$0"; read -u 9' %s $i; done`+"\n", nodes, idle(t, t.TempDir())))
	sh.await(t, 20*time.Second, "iter-1")
	sh.typeIn(t, "\x03")
	sh.typeIn(t, `echo "af""ter"`+"\n")
	sh.await(t, 20*time.Second, "after")
	if strings.Contains(sh.out.String(), "iter-2") {
		t.Errorf("the loop went on after Ctrl-C:\n%s", sh.out.String())
	}
	if got := owners(t, lab, "loop"); strings.Join(got, "") != "" {
		t.Errorf("lock left on the nodes after Ctrl-C: owners %q", got)
	}
}

// ticker returns a command line that appends a tick to a file in dir every
// 0.2 s, printing its pid first as sh=PID, and the ticks file. It never
// forks: bash waits between ticks on a FIFO no one writes (read -t). A
// command that forks a sleep after each tick had its Ctrl-Z, typed just
// after a tick, land now and then between a dash's vfork and its child's
// exec: the child stops before exec, dash stays blocked in vfork, not
// stopped, and no shell — with or without quorumlock — sees the job stop
// (more often the busier the machine).
func ticker(t *testing.T, dir string) (cmdline, ticks string) {
	t.Helper()
	ticks = dir + "/ticks"
	return fmt.Sprintf(`bash -c 'exec 9<>"$0"; echo "sh=$$"; while :; do echo x >> "$1"; read -t 0.2 -u 9; done' %s %s`, idle(t, dir), ticks), ticks
}

// idle returns a new FIFO in dir that no one writes: a command waits on it
// (read) without forking.
func idle(t *testing.T, dir string) string {
	t.Helper()
	fifo := dir + "/idle"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	return fifo
}

// awaitPid waits until the terminal shows name=PID and returns PID.
func (sh *shell) awaitPid(t *testing.T, d time.Duration, name string) int {
	t.Helper()
	re := regexp.MustCompile(name + `=(\d+)`)
	testkit.Eventually(t, d, "the terminal to show "+name+"=PID", func() bool { return re.MatchString(sh.out.String()) })
	return pidOf(t, sh.out.String(), name)
}

func TestRunCtrlZStopsTheCommandWithIt(t *testing.T) {
	_, nodes := startLab(t, 3)
	ticker, ticks := ticker(t, t.TempDir())
	sh := startShell(t)
	// A TTL that renewals keep on a loaded machine: the lease must lapse
	// because the job is stopped, not before.
	sh.typeIn(t, fmt.Sprintf(`quorumlock run --nodes %s --key z --ttl 3s --node-timeout 200ms -- %s`+"\n", nodes, ticker))
	testkit.Eventually(t, 20*time.Second, "the command to tick", func() bool { return fileSize(ticks) > 0 })
	sh.typeIn(t, "\x1a")
	sh.await(t, 10*time.Second, "Stopped")
	stoppedAt := fileSize(ticks)

	// Its renewals stop with it: the lease lapses, and another run gets the
	// lock — while the stopped command does no work.
	if code, _, stderr := runBinary(t, "", runArgs(nodes, "z", "--wait", "20s", "--", "true")...); code != 0 {
		t.Fatalf("another run while the job is stopped: status %d; stderr:\n%s", code, stderr)
	}
	if got := fileSize(ticks); got != stoppedAt {
		t.Errorf("the command worked on while stopped: %d bytes of ticks, %d when stopped", got, stoppedAt)
	}
	// Continued, it finds the lock lapsed and never runs unlocked.
	sh.typeIn(t, "fg\n")
	sh.await(t, 20*time.Second, "lost while stopped")
	sh.typeIn(t, `echo "st""atus=$?"`+"\n")
	sh.await(t, 10*time.Second, fmt.Sprintf("status=%d", exitLockLost))
	if got := fileSize(ticks); got != stoppedAt {
		t.Errorf("the command worked on after fg without the lock: %d bytes of ticks, %d when stopped", got, stoppedAt)
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// Continued while its lease lasts, the job goes on under the same lock.
func TestRunCtrlZThenFgGoesOn(t *testing.T) {
	lab, nodes := startLab(t, 3)
	ticker, ticks := ticker(t, t.TempDir())
	sh := startShell(t)
	sh.typeIn(t, fmt.Sprintf(`quorumlock run --nodes %s --key fg --ttl 30s --node-timeout 200ms -- %s`+"\n", nodes, ticker))
	testkit.Eventually(t, 20*time.Second, "the command to tick", func() bool { return fileSize(ticks) > 0 })
	cmd := sh.awaitPid(t, 10*time.Second, "sh")
	sh.typeIn(t, "\x1a")
	sh.await(t, 10*time.Second, "Stopped")
	if !stopped(cmd) {
		t.Errorf("the shell reports the job stopped, but its command %d runs on", cmd)
	}
	stoppedAt := fileSize(ticks)
	owner := heldBy(t, lab, "fg")
	if owner == "" {
		t.Fatal("the lock is not held while the job is stopped within its lease")
	}
	sh.typeIn(t, "fg\n")
	testkit.Eventually(t, 10*time.Second, "the command to tick again after fg", func() bool { return fileSize(ticks) > stoppedAt })
	if got := heldBy(t, lab, "fg"); got != owner {
		t.Errorf("after fg the lock is held by %q, want the same owner %q", got, owner)
	}
	sh.typeIn(t, "\x03")
	sh.typeIn(t, `echo "st""atus=$?"`+"\n")
	sh.await(t, 10*time.Second, "status=130")
}

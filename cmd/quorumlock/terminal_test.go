//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"
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
	sh.typeIn(t, fmt.Sprintf(`for i in 1 2 3; do quorumlock run --nodes %s --key loop --node-timeout 200ms -- sh -c 'echo "it""er-$0"; sleep 30' $i; done`+"\n", nodes))
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

// The command sleeps between ticks rather than forking often: a dash
// forks by vfork, and a Ctrl-Z that stops its child before exec leaves it
// blocked in vfork, not stopped — with or without quorumlock, no shell
// sees that job stop.
func TestRunCtrlZStopsTheCommandWithIt(t *testing.T) {
	_, nodes := startLab(t, 3)
	ticks := t.TempDir() + "/ticks"
	sh := startShell(t)
	sh.typeIn(t, fmt.Sprintf(`quorumlock run --nodes %s --key z --ttl 1s --node-timeout 200ms -- sh -c 'while :; do echo x >> %s; sleep 0.2; done'`+"\n", nodes, ticks))
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
	ticks := t.TempDir() + "/ticks"
	sh := startShell(t)
	sh.typeIn(t, fmt.Sprintf(`quorumlock run --nodes %s --key fg --ttl 30s --node-timeout 200ms -- sh -c 'echo "sh=$$"; while :; do echo x >> %s; sleep 0.2; done'`+"\n", nodes, ticks))
	testkit.Eventually(t, 20*time.Second, "the command to tick", func() bool { return fileSize(ticks) > 0 })
	cmd := pidOf(t, sh.out.String(), "sh")
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

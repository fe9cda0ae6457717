package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// forwarded are the signals quorumlock passes on to CMD's process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// supervise runs argv while l is held and returns the exit status of run.
func (c *cli) supervise(l *redlock.Lock, argv []string, f *runFlags, sigs <-chan os.Signal) int {
	cmd := c.command(argv, f.claim.env(l))
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(c.stderr, "quorumlock: %v\n", err)
		c.reportRelease(f.claim, c.release(l))
		return startStatus(err)
	}
	lost := c.wait(cmd, l, f, sigs)
	code := exitStatus(cmd.ProcessState)
	err := c.release(l)
	if lost {
		return exitLockLost
	}
	if errors.Is(err, redlock.ErrLockLost) {
		fmt.Fprintf(c.stderr, "quorumlock: %v was found lost at release: "+
			"the command's work may have overlapped another holder's: %v\n", f.claim, err)
		return exitLockLost
	}
	c.reportRelease(f.claim, err)
	return code
}

// command returns CMD with quorumlock's standard streams and environment
// plus env, in a process group of its own, so that a lost lock stops all of
// it.
func (c *cli) command(argv, env []string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	cmd.Env = childEnv(os.Environ(), env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
	return cmd
}

// wait waits for cmd to exit, forwarding sigs to its process group. If the
// lock ends first, it sends SIGTERM, then SIGKILL after the grace period,
// and reports true.
func (c *cli) wait(cmd *exec.Cmd, l *redlock.Lock, f *runFlags, sigs <-chan os.Signal) (lost bool) {
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		cmd.Wait() // the status is in cmd.ProcessState
	}()
	done := l.Done()
	var kill <-chan time.Time
	for {
		select {
		case <-exited:
			if lost { // whatever is left of CMD must not run on unprotected
				signalGroup(cmd, syscall.SIGKILL)
			}
			return lost
		case s := <-sigs:
			signalGroup(cmd, s)
		case <-done:
			done, lost = nil, true
			fmt.Fprintf(c.stderr, "quorumlock: %v lost (%v): sending SIGTERM to the command, SIGKILL in %v\n",
				f.claim, l.Err(), f.grace)
			signalGroup(cmd, syscall.SIGTERM)
			t := time.NewTimer(f.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			signalGroup(cmd, syscall.SIGKILL)
		}
	}
}

// signalGroup sends sig to cmd's process group. Errors mean the group is
// gone already.
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		syscall.Kill(-cmd.Process.Pid, s)
	}
}

// reportRelease warns when the release after CMD was not confirmed; the
// lock then expires with its TTL on the nodes it is left on.
func (c *cli) reportRelease(what claim, err error) {
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock: release of %v not confirmed, it expires with its TTL: %v\n", what, err)
	}
}

// exitStatus is a shell's view of how CMD ended: its exit code, or 128+N
// if signal N killed it.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return exitInternal
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// startStatus is the exit status when CMD could not be started, as env(1).
func startStatus(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitNoExec
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// forwarded are the signals quorumlock passes on to CMD's process group, and
// SIGTSTP, on which it stops the group and itself.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP}

// raised are the signals quorumlock dies of, once the lock is released, when
// CMD died of them or they interrupted its wait: a calling shell then sees
// the interruption (a bash loop stops on a child killed by SIGINT).
var raised = map[syscall.Signal]bool{syscall.SIGINT: true, syscall.SIGTERM: true, syscall.SIGHUP: true, syscall.SIGPIPE: true}

// findCommand resolves CMD as execvp would, before the lock is taken: a
// command that is not there exits 127, one that cannot be run 126.
func findCommand(name string) (string, int, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, exitOK, nil
	}
	return "", startStatus(err), err
}

// supervise runs path (argv) while l is held and returns run's exit status:
// CMD's own once every process of its group has exited and l is released.
func (c *cli) supervise(l *redlock.Lock, ns *nodeSet, path string, argv []string, f *runFlags, sigs <-chan os.Signal) int {
	j, err := c.startJob(path, argv, f.claim.env(l))
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock: %v\n", err)
		c.reportRelease(f.claim, c.release(l))
		var se startError
		if errors.As(err, &se) {
			return se.code
		}
		return exitInternal
	}
	if c.verbose {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go c.watchNodes(ctx, ns, f.ttl/3)
	}
	lost := c.watch(j, l, f, sigs)
	err = c.release(l)
	switch {
	case lost:
		return exitLockLost
	case errors.Is(err, redlock.ErrLockLost):
		fmt.Fprintf(c.stderr, "quorumlock: %v was found lost at release: "+
			"the command's work may have overlapped another holder's: %v\n", f.claim, oneLine(err))
		return exitLockLost
	case !j.ended:
		fmt.Fprintf(c.stderr, "quorumlock: the keeper of the command's process group died: the group was killed\n")
		c.reportRelease(f.claim, err)
		return exitInternal
	}
	c.reportRelease(f.claim, err)
	if j.signal != 0 && raised[j.signal] {
		c.raise = j.signal
	}
	return j.status
}

// A startError is a command that could not be started, with run's status.
type startError struct {
	code int
	msg  string
}

func (e startError) Error() string { return e.msg }

// reportRelease warns when the release after CMD was not confirmed; the
// lock then expires with its TTL on the nodes it is left on.
func (c *cli) reportRelease(what claim, err error) {
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock: release of %v not confirmed, it expires with its TTL: %v\n", what, oneLine(err))
	}
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

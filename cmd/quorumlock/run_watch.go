package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// watch waits until CMD and every other process of its group have exited,
// forwarding sigs to the group and stopping with it. If the lock ends first,
// it sends the group SIGTERM, then, after the grace period, has the keeper
// SIGKILL the group and every other process under it, and reports true.
// With --kill-group, what is left of the group when CMD exits gets SIGTERM,
// then SIGKILL.
func (c *cli) watch(j *job, l *redlock.Lock, f *runFlags, sigs <-chan os.Signal) (lost bool) {
	done := l.Done()
	var kill <-chan time.Time
	terminate := func() {
		j.kill(syscall.SIGTERM)
		j.kill(syscall.SIGCONT)
		t := time.NewTimer(f.grace)
		kill = t.C
	}
	for {
		select {
		case ev, ok := <-j.events:
			switch {
			case !ok: // the keeper exited: the group is gone, or the keeper died
				j.wait()
				if lost || !j.ended {
					j.kill(syscall.SIGKILL) // nothing may run on unprotected
				}
				return lost
			case ev.kind == "stopped":
				if j.tty != nil && stopped(j.pgid) && c.suspend(j, l, f) {
					done, lost = nil, true
				}
			case ev.kind == "empty":
				// The group is gone. After a loss nothing started under the
				// run may outlive it, whatever its process group: the keeper
				// kills what is left under it. Otherwise a process that left
				// the group runs on, unlocked, as documented.
				if lost {
					j.killAll()
				} else {
					j.release()
				}
			case ev.kind == "exit" || ev.kind == "signal":
				j.end(ev)
				j.takeTerminal()
				c.logf("the command exited (status %d); waiting for the rest of its process group", j.status)
				if f.killGroup && kill == nil {
					terminate()
				}
			}
		case s := <-sigs:
			if s == syscall.SIGTSTP {
				if c.suspend(j, l, f) {
					done, lost = nil, true
				}
				continue
			}
			j.forward(s)
		case <-done:
			done, lost = nil, true
			fmt.Fprintf(c.stderr, "quorumlock: %v lost (%v): sending SIGTERM to the command's process group, SIGKILL in %v\n",
				f.claim, c.lossCause(l), f.grace)
			if kill == nil {
				terminate()
			}
		case <-kill:
			kill = nil
			if lost { // nothing started under the run may outlive the lock
				j.killAll()
			} else {
				j.kill(syscall.SIGKILL)
			}
		}
	}
}

// suspend stops CMD's whole group and then quorumlock itself, as Ctrl-Z
// stops a shell's job, giving the terminal back to quorumlock's group. Its
// renewals stop with it. Once continued, it extends the lock before it
// continues the group (and gives it the terminal again if quorumlock's group
// is in the foreground): if the lock lapsed meanwhile, the group, which never
// ran unlocked, is killed, and suspend reports true.
func (c *cli) suspend(j *job, l *redlock.Lock, f *runFlags) (lost bool) {
	j.kill(syscall.SIGSTOP) // every process of the group, whatever it does with SIGTSTP
	j.takeTerminal()
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	// Continued.
	if why := c.extendAfterStop(l); why != "" {
		fmt.Fprintf(c.stderr, "quorumlock: %v lost while stopped (%s): killing the command's process group, which stayed stopped\n",
			f.claim, why)
		j.killAll()
		return true
	}
	j.giveTerminal()
	j.kill(syscall.SIGCONT)
	return false
}

// extendAfterStop extends l once quorumlock is continued, and says why l
// is lost if it is: its validity ran out while stopped, or a majority no
// longer holds it. Only an extension that a majority confirmed lets the
// group go on; one that too few nodes answered is tried again while l is
// valid.
func (c *cli) extendAfterStop(l *redlock.Lock) string {
	for {
		until := l.Until()
		if !time.Now().Before(until) || l.Err() != nil {
			return "its lease ran out while quorumlock was stopped, without renewals"
		}
		ctx, cancel := context.WithDeadline(context.Background(), until)
		err := l.Extend(ctx)
		cancel()
		switch {
		case err == nil:
			return ""
		case errors.Is(err, redlock.ErrLockLost) || l.Err() != nil:
			return oneLine(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

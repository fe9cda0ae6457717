package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// A job is CMD's process group, run by the keeper, as quorumlock sees it.
type job struct {
	keeper   *exec.Cmd
	lifeline *os.File // quorumlock's end: closed only by quorumlock's death
	events   <-chan keeperEvent
	pgid     int
	tty      *os.File // the controlling terminal, if any: job control then, as in a shell
	ended    bool     // CMD has exited
	status   int      // CMD's exit status, 128+N after signal N
	signal   syscall.Signal
}

// A keeperEvent is one line of the keeper's status pipe: "pgid N",
// "error CODE MESSAGE", "stopped SIG", "exit N" or "signal N".
type keeperEvent struct {
	kind string
	n    int
	msg  string
}

// startJob starts the keeper, which starts CMD in a process group of its
// own (in the terminal's foreground in an interactive run), and returns once
// the group exists.
func (c *cli) startJob(path string, argv, env []string) (*job, error) {
	self, err := keeperPath()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer statusW.Close()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		return nil, err
	}
	defer lifeR.Close()
	j := &job{lifeline: lifeW}
	tty, fg := controllingTerminal()
	j.tty = tty
	mode := "bg"
	if fg {
		mode = "fg"
	}
	j.keeper = &exec.Cmd{Path: self, Args: append([]string{keeperName, mode, path}, argv...),
		Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr, Env: childEnv(os.Environ(), env),
		ExtraFiles: []*os.File{statusW, lifeR, j.tty},
		// Out of quorumlock's group, so that a signal to that group does not
		// kill the keeper with quorumlock (run_keeper.go).
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := j.keeper.Start(); err != nil {
		statusR.Close()
		j.close()
		return nil, err
	}
	j.events = readEvents(statusR)
	return j, j.started()
}

// started waits for the keeper's first event: CMD's group, or why CMD could
// not start.
func (j *job) started() error {
	ev, ok := <-j.events
	switch {
	case ok && ev.kind == "pgid":
		j.pgid = ev.n
		return nil
	case ok && ev.kind == "error":
		j.wait()
		return startError{code: ev.n, msg: ev.msg}
	}
	j.wait()
	return startError{code: exitInternal, msg: "the keeper of the command failed to start it"}
}

// readEvents parses the keeper's status lines until it exits.
func readEvents(r *os.File) <-chan keeperEvent {
	ch := make(chan keeperEvent, 4)
	go func() {
		defer close(ch)
		defer r.Close()
		s := bufio.NewScanner(r)
		for s.Scan() {
			kind, rest, _ := strings.Cut(s.Text(), " ")
			num, msg, _ := strings.Cut(rest, " ")
			n, _ := strconv.Atoi(num)
			ch <- keeperEvent{kind: kind, n: n, msg: msg}
		}
	}()
	return ch
}

// wait waits for the keeper to exit, once its status pipe closed.
func (j *job) wait() {
	j.keeper.Wait()
	j.close()
}

func (j *job) close() {
	j.lifeline.Close()
	if j.tty != nil {
		j.tty.Close()
	}
}

// ended records how CMD ended.
func (j *job) end(ev keeperEvent) {
	j.ended, j.status = true, ev.n
	if ev.kind == "signal" {
		j.signal, j.status = syscall.Signal(ev.n), 128+ev.n
	}
}

// kill sends sig to CMD's process group. Errors mean the group is gone.
func (j *job) kill(sig syscall.Signal) { syscall.Kill(-j.pgid, sig) }

// killAll has the keeper SIGKILL CMD's group and every other process left
// under it, in whatever process group, and exit once none is left: it
// closes the lifeline, as quorumlock's death would. The keeper's exit ends
// j.events.
func (j *job) killAll() { j.lifeline.Close() }

// release tells the keeper, once CMD's group is gone and the lock held to
// the end, to exit without killing the processes that left the group.
func (j *job) release() { j.lifeline.Write([]byte{1}) }

// forward passes sig on to CMD's group, and continues it if CMD is stopped
// (as a shell's kill does) or has exited (what is left of the group may
// be stopped), so that the signal acts now.
func (j *job) forward(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	j.kill(s)
	if j.ended || stopped(j.pgid) {
		j.kill(syscall.SIGCONT)
	}
}

// giveTerminal makes CMD's group the terminal's foreground group, if this
// run is interactive and quorumlock's own group has the terminal.
func (j *job) giveTerminal() {
	if j.tty == nil {
		return
	}
	if fg, err := foregroundOf(int(j.tty.Fd())); err == nil && fg == syscall.Getpgrp() {
		setForeground(int(j.tty.Fd()), j.pgid)
	}
}

// takeTerminal gives the terminal back to quorumlock's group, if CMD's group
// has it.
func (j *job) takeTerminal() {
	if j.tty == nil {
		return
	}
	if fg, err := foregroundOf(int(j.tty.Fd())); err == nil && fg == j.pgid {
		setForeground(int(j.tty.Fd()), syscall.Getpgrp())
	}
}

// stopped reports whether process pid is stopped, by /proc; where it cannot
// tell, it says yes.
func stopped(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(after, "T") || strings.HasPrefix(after, "t")
}

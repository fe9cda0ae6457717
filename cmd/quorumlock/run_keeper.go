package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// The keeper is quorumlock re-executed as CMD's parent, between quorumlock
// and CMD's process group: quorumlock → keeper → CMD's group. It exists for
// what quorumlock cannot do itself once it is gone:
//   - When quorumlock dies, however it dies (kill -9 included), the keeper
//     sees its lifeline pipe close and kills CMD's whole process group at
//     once, then every other process left under it, in whatever process
//     group (a nested run's command, a setsid), and exits only once none is
//     left — long before the lease, which quorumlock no longer renews, can
//     end. quorumlock closes the lifeline itself to have everything killed
//     when its lock is lost. The parent-death signal alone would reach only
//     CMD itself, not the children CMD started.
//   - It runs in a process group of its own, so that a signal to
//     quorumlock's group (kill -9 of a shell's job, or of an outer run's
//     command group, which holds a nested quorumlock) does not kill it with
//     quorumlock: it outlives quorumlock to do the above.
//   - It waits for every process of the group, not only CMD: as a child
//     subreaper (Linux) it inherits the group's orphans and reaps them, and
//     it exits only once no process of the group is left. quorumlock holds
//     the lock until then.
//
// It reports to quorumlock on its status pipe, one line per event (see
// keeperEvent): the group's id, CMD stopped, CMD's end, the group empty;
// then it waits for quorumlock's word on the lifeline: released, it exits
// 0; the lifeline closed, it kills every process left under it first.
const keeperName = "quorumlock-keeper"

// The keeper's file descriptors beside stdin, stdout and stderr.
const (
	keeperStatusFD   = 3 // write end of the status pipe to quorumlock
	keeperLifelineFD = 4 // read end of a pipe that quorumlock never writes: EOF when it dies
	keeperTTYFD      = 5 // the controlling terminal, when CMD gets the foreground
)

// groupPoll is how often the keeper checks whether CMD's group is empty once
// CMD itself has exited.
const groupPoll = 20 * time.Millisecond

// keep is the keeper's main: args are "fg" or "bg", CMD's path, then CMD's
// argv. Its exit status is 0 once CMD's group is gone, else 125.
func keep(args []string) int {
	for _, fd := range []int{keeperStatusFD, keeperLifelineFD, keeperTTYFD} {
		syscall.CloseOnExec(fd) // CMD inherits none of them
	}
	status := os.NewFile(keeperStatusFD, "status")
	if len(args) < 3 {
		fmt.Fprintf(status, "error %d keeper: bad arguments %q\n", exitInternal, args)
		return exitInternal
	}
	// Caught (not ignored, which CMD would inherit) and dropped: signals for
	// CMD reach its group from quorumlock or the terminal, never through the
	// keeper, which must outlive CMD's group.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
		syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	setSubreaper()
	pid, err := startCommand(args[0] == "fg", args[1], args[2:])
	if err != nil {
		fmt.Fprintf(status, "error %d %s\n", startStatus(err), oneLine(err))
		return exitOK
	}
	released := make(chan struct{})
	go watchLifeline(pid, released)
	fmt.Fprintf(status, "pgid %d\n", pid)
	reapUntilEmpty(status, pid)
	// The group is gone, but a process that left it (setsid, a daemon) may
	// still run under the keeper. Only quorumlock knows whether the lock
	// still holds: it releases the keeper (one byte on the lifeline), which
	// then leaves such processes running unlocked, as documented; or, the
	// lock lost, closes the lifeline, and they are killed (watchLifeline).
	// Exiting here at once would hand them to init before quorumlock could
	// have them killed.
	fmt.Fprintln(status, "empty")
	<-released
	killing.Lock() // never released: once killing began, it ends the keeper
	return exitOK
}

// killing is held from the moment the keeper starts killing everything
// under it: it must not exit 0 meanwhile, though CMD's group may be gone.
var killing sync.Mutex

// startCommand starts CMD as the leader of a new process group — in the
// terminal's foreground when fg — and, as execvp does, runs a file that is
// not an executable format through /bin/sh.
func startCommand(fg bool, path string, argv []string) (int, error) {
	attr := &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Foreground: fg},
	}
	if fg {
		attr.Sys.Ctty = keeperTTYFD
	}
	p, err := os.StartProcess(path, argv, attr)
	if fg && errors.Is(err, syscall.ENOTTY) { // the terminal went away: run without it
		attr.Sys.Foreground = false
		p, err = os.StartProcess(path, argv, attr)
	}
	if errors.Is(err, syscall.ENOEXEC) {
		p, err = os.StartProcess("/bin/sh", append([]string{argv[0], path}, argv[1:]...), attr)
	}
	if err != nil {
		return 0, err
	}
	return p.Pid, nil
}

// watchLifeline kills CMD's group and every process left under the keeper
// as soon as its end of the lifeline closes — quorumlock is gone, however
// it died, or lost its lock — and then exits. A byte read on the lifeline
// (quorumlock's release, once the group is gone and the lock held to the
// end) closes released instead.
func watchLifeline(pgid int, released chan<- struct{}) {
	var b [1]byte
	if n, _ := os.NewFile(keeperLifelineFD, "lifeline").Read(b[:]); n == 1 {
		close(released)
		return
	}
	killing.Lock()
	killEverything(pgid)
	os.Exit(exitLockLost)
}

// killPoll is how often killEverything looks for processes left.
const killPoll = 5 * time.Millisecond

// killEverything SIGKILLs group pgid, then each child of the keeper until
// none is left, reaping them. As a child subreaper, the keeper inherits the
// children of each process that dies under it, so that this ends only once
// no process started under it is left, in whatever process group. It kills
// only its own children, whose pids cannot be reused before it reaps them.
func killEverything(pgid int) {
	syscall.Kill(-pgid, syscall.SIGKILL)
	for {
		for _, pid := range children() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if !reapAll() {
			return
		}
		time.Sleep(killPoll)
	}
}

// reapAll reaps the keeper's children that have exited, and reports whether
// any child is left.
func reapAll() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil: // ECHILD
			return false
		case pid == 0:
			return true
		}
	}
}

// reapUntilEmpty reaps CMD, reporting its stops and its end, and every
// orphan the keeper inherits, until no process of group pgid is left.
func reapUntilEmpty(status io.Writer, pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WUNTRACED, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: no descendant at all is left
			return
		}
		if pid != pgid {
			continue // an orphan of the group, or a daemon it started
		}
		switch {
		case ws.Stopped():
			fmt.Fprintf(status, "stopped %d\n", int(ws.StopSignal()))
		case ws.Signaled():
			fmt.Fprintf(status, "signal %d\n", int(ws.Signal()))
			waitGroupGone(pgid)
			return
		default:
			fmt.Fprintf(status, "exit %d\n", ws.ExitStatus())
			waitGroupGone(pgid)
			return
		}
	}
}

// waitGroupGone returns once no process is left in group pgid, reaping the
// orphans that come to the keeper meanwhile (a zombie still counts as a
// member until reaped).
func waitGroupGone(pgid int) {
	for {
		for {
			var ws syscall.WaitStatus
			pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 {
				break
			}
		}
		if errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
			return
		}
		time.Sleep(groupPoll)
	}
}

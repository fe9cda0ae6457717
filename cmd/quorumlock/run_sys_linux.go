package main

import (
	"bytes"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// keeperPath is the executable the keeper runs: this very binary, even if
// its file was replaced or removed since quorumlock started.
func keeperPath() (string, error) { return "/proc/self/exe", nil }

// setSubreaper makes the keeper the parent of the orphans of CMD's group, so
// that it can reap them and see the group end.
func setSubreaper() {
	const prSetChildSubreaper = 36
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// children returns the pids of the calling process's children, by /proc:
// the keeper's, which are CMD and the orphans it inherited.
func children() []int {
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[1] == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// dieOf kills the calling process with sig, as the default action of sig
// would: the Go runtime's handler ignores a SIGPIPE that is sent rather
// than caused by a write to stdout or stderr, so the action is reset to
// SIG_DFL underneath it first. It returns only if sig does not kill.
func dieOf(sig syscall.Signal) {
	signal.Reset(sig)
	var dfl [4]uint64 // struct sigaction all zero: SIG_DFL, no flags, empty mask
	const sigsetSize = 8
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, sigsetSize, 0, 0)
	unblock := uint64(1) << (uint(sig) - 1)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigUnblock, uintptr(unsafe.Pointer(&unblock)), 0, sigsetSize, 0, 0)
	syscall.Kill(os.Getpid(), sig)
}

// how of rt_sigprocmask(2).
const (
	sigBlock   = 0
	sigUnblock = 1
	sigSetmask = 2
)

// setForeground makes group pgid the foreground process group of terminal
// fd, as a shell does for a job, with SIGTTOU blocked on the calling thread:
// a background group may then take the terminal (back) without being
// stopped for it.
func setForeground(fd, pgid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	set, old := uint64(1)<<(uint(syscall.SIGTTOU)-1), uint64(0)
	const sigsetSize = 8
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigBlock,
		uintptr(unsafe.Pointer(&set)), uintptr(unsafe.Pointer(&old)), sigsetSize, 0, 0); e != 0 {
		return e
	}
	defer syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigSetmask,
		uintptr(unsafe.Pointer(&old)), 0, sigsetSize, 0, 0)
	pg := int32(pgid)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pg))); e != 0 {
		return e
	}
	return nil
}

// foregroundOf returns the foreground process group of terminal fd.
func foregroundOf(fd int) (int, error) {
	var pg int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pg))); e != 0 {
		return 0, e
	}
	return int(pg), nil
}

// controllingTerminal opens the controlling terminal, if quorumlock has
// one, and reports whether quorumlock's process group is its foreground
// group — an interactive run, whose command gets the terminal.
func controllingTerminal() (tty *os.File, fg bool) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	pg, err := foregroundOf(int(tty.Fd()))
	return tty, err == nil && pg == syscall.Getpgrp()
}

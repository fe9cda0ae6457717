//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// A shell is an interactive bash on a pseudo-terminal of its own, as a user
// at a terminal has: job control, Ctrl-C and Ctrl-Z through the terminal.
type shell struct {
	pty    *os.File // the master side: what the user types and sees
	cmd    *exec.Cmd
	out    testkit.Buffer
	exited chan struct{}
}

// openPTY returns a new pseudo-terminal's master and slave, with nothing but
// the standard library: /dev/ptmx, then unlock and name the slave by ioctl.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var n uint32
	raw, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var errno syscall.Errno
	raw.Control(func(fd uintptr) {
		var unlock int32
		if _, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
			return
		}
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n)))
	})
	if errno != 0 {
		master.Close()
		t.Fatalf("pty ioctl: %v", errno)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	return master, slave
}

// startShell starts bash -i on a new terminal, in a session of its own
// whose controlling terminal that is, with quorumlock's directory first in
// $PATH. It is killed in t.Cleanup.
func startShell(t *testing.T) *shell {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	master, slave := openPTY(t)
	defer slave.Close()
	sh := &shell{pty: master, exited: make(chan struct{}),
		cmd: exec.Command("bash", "--norc", "--noprofile", "-i")}
	sh.cmd.Stdin, sh.cmd.Stdout, sh.cmd.Stderr = slave, slave, slave
	sh.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	dir := t.TempDir() // quorumlock first in $PATH, whatever the binary's name
	if err := os.Symlink(binary(t), dir+"/quorumlock"); err != nil {
		t.Fatal(err)
	}
	sh.cmd.Env = append(os.Environ(), "PS1=$ ", "TERM=dumb", "PATH="+dir+":"+os.Getenv("PATH"), envNodes+"=",
		"GORACE=atexit_sleep_ms=50")
	if err := sh.cmd.Start(); err != nil {
		master.Close()
		t.Fatalf("start bash: %v", err)
	}
	go func() {
		defer close(sh.exited)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			sh.out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		sh.cmd.Wait()
	}()
	t.Cleanup(func() {
		syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
		sh.cmd.Process.Kill()
		master.Close()
		<-sh.exited
	})
	return sh
}

// typeIn writes s to the terminal, as typed.
func (sh *shell) typeIn(t *testing.T, s string) {
	t.Helper()
	if _, err := sh.pty.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// await waits until the terminal has shown want (beyond what the echo of
// the typed lines shows: build want so that the command line does not
// contain it).
func (sh *shell) await(t *testing.T, d time.Duration, want string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(sh.out.String(), want) {
		if time.Now().After(deadline) {
			ps, _ := exec.Command("ps", "-o", "pid,ppid,pgid,tpgid,stat,args", "-s", fmt.Sprint(sh.cmd.Process.Pid)).CombinedOutput()
			t.Fatalf("the terminal did not show %q within %v; it shows:\n%s\nits session:\n%s", want, d, sh.out.String(), ps)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

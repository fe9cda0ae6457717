package redislab

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pollInterval is the pause between two probes of a condition being waited
// for; every such wait also has a deadline.
const pollInterval = 10 * time.Millisecond

var errExited = errors.New("redislab: process exited")

// A process is one started command: redis-server, or the wrapper that runs
// it. It leads its own process group, so that a signal sent to the group
// also reaches a wrapper's children (faketime forks redis-server).
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the leader has exited and been reaped
	err    error         // the leader's Wait result; read after exited is closed
}

// spawn starts argv in dir with stdout and stderr appended to logPath.
func spawn(argv []string, dir, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	faketime := slices.ContainsFunc(argv, func(a string) bool { return filepath.Base(a) == "faketime" })
	if faketime {
		sweepFaketime()
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go p.reap(faketime)
	return p, nil
}

// reap waits for the leader to exit, removes what a faketime leader left
// behind, and closes exited. Tests that check for leaked goroutines name it.
func (p *process) reap(faketime bool) {
	p.err = p.cmd.Wait()
	if faketime {
		removeFaketime(p.cmd.Process.Pid)
	}
	close(p.exited)
}

// faketime(1) names a semaphore and a shared memory object after its own
// PID, and removes them when it exits — but not when it is killed, as Kill
// and the lab's end kill it (SIGKILL). A later faketime given the same PID
// (pid_max is 32768 on Debian: a CI run wraps it) then exits at once with
// "faketime: sem_open: File exists", and its node never starts. The lab
// removes them once the wrapper is reaped (env, as a wrapper, execs faketime
// in its own PID), and, before it starts one, those of wrappers no longer
// running (a test binary killed by its timeout reaps none).
const shmDir = "/dev/shm"

var faketimePrefixes = []string{"sem.faketime_sem_", "faketime_shm_"}

// removeFaketime removes the objects of the faketime that ran as pid.
func removeFaketime(pid int) {
	for _, prefix := range faketimePrefixes {
		_ = os.Remove(filepath.Join(shmDir, prefix+strconv.Itoa(pid)))
	}
}

// sweepFaketime removes the objects of every faketime no longer running.
func sweepFaketime() {
	entries, _ := os.ReadDir(shmDir)
	for _, e := range entries {
		for _, prefix := range faketimePrefixes {
			rest, ok := strings.CutPrefix(e.Name(), prefix)
			if !ok {
				continue
			}
			if pid, err := strconv.Atoi(rest); err == nil && pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
				_ = os.Remove(filepath.Join(shmDir, e.Name()))
			}
		}
	}
}

// signal sends sig to the process group while its leader still runs.
func (p *process) signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return fmt.Errorf("%w (%v)", errExited, p.err)
	default:
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// kill sends SIGKILL to the whole group, even if the leader already exited
// (a wrapper's child may outlive it), and waits for the leader to be reaped.
func (p *process) kill() error {
	err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("redislab: SIGKILL: %w", err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(startTimeout):
		return fmt.Errorf("redislab: pid %d still running %v after SIGKILL", p.cmd.Process.Pid, startTimeout)
	}
}

// waitPing returns once addr answers PING with PONG (not LOADING), or an
// error when exited is closed first or timeout passes. A nil exited never
// fires.
func waitPing(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ping(addr, deadline)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redislab: no PONG from %s within %v: %w", addr, timeout, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("%w before answering PING on %s", errExited, addr)
		case <-time.After(pollInterval):
		}
	}
}

// ping sends one inline PING on a fresh connection.
func ping(addr string, deadline time.Time) error {
	conn, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	if d := time.Now().Add(250 * time.Millisecond); d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if reply != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

// waitRefused returns once addr refuses connections, or an error after
// timeout.
func waitRefused(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
		if err != nil {
			return nil
		}
		conn.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("redislab: %s still accepts connections %v after SIGKILL", addr, timeout)
		}
		time.Sleep(pollInterval)
	}
}

// freePort returns a loopback port that was free a moment ago. Another
// process may take it before redis-server binds it; callers retry.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Cluster bus ports are picked in [busLow, busHigh): below Linux's
// ephemeral range (32768 and up by default), from which freePort's client
// ports and every client socket come. redis-server's default bus port,
// its port + 10000, would land in that range — taken by some socket now and
// then, or past 65535.
const busLow, busHigh = 20000, 32000

// freeBusPort returns a port of [busLow, busHigh) that was free a moment
// ago; as with freePort, callers retry when redis-server cannot bind it.
func freeBusPort() (int, error) {
	var err error
	for range 20 {
		port := busLow + rand.IntN(busHigh-busLow)
		var l net.Listener
		if l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("redislab: no free cluster bus port in [%d, %d): %w", busLow, busHigh, err)
}

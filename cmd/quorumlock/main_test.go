package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// bin is the quorumlock binary the tests run, built once by binary.
var bin struct {
	once sync.Once
	dir  string // removed by TestMain
	path string
	err  error
}

func TestMain(m *testing.M) {
	// A test that runs `run` in-process starts its keeper by re-executing
	// this very binary (os.Executable) under the keeper's name: be that
	// keeper, not a second run of every test, which would start its own
	// keepers and so on without end.
	if len(os.Args) > 0 && os.Args[0] == keeperName {
		os.Exit(keep(os.Args[1:]))
	}
	testkit.QuietRedis()
	code := m.Run()
	if bin.dir != "" {
		os.RemoveAll(bin.dir)
	}
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// binary builds quorumlock once per test run — with the race detector when
// the tests have it — and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	bin.once.Do(func() {
		if other := os.Getenv("QUORUMLOCK_TEST_BINARY"); other != "" { // another build, e.g. to see a test fail without its fix
			bin.path = other
			return
		}
		if bin.dir, bin.err = os.MkdirTemp("", "quorumlock-test-"); bin.err != nil {
			return
		}
		bin.path = bin.dir + "/quorumlock"
		args := []string{"build", "-o", bin.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			bin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path
}

// A proc is a quorumlock process started by a test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr testkit.Buffer
	exited         chan struct{}
}

// start runs the binary with args, stdin as its standard input, and no
// $QUORUMLOCK_NODES. It is killed in t.Cleanup if still running.
func start(t *testing.T, stdin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary(t), args...), exited: make(chan struct{})}
	p.cmd.Stdin = strings.NewReader(stdin)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// A command's own background children may keep the output pipes open
	// after quorumlock exited (TestRunForwardsSignals' `sleep 30 &` when it
	// outlives the signal): Wait must not wait for them.
	p.cmd.WaitDelay = time.Second
	p.cmd.Env = append(os.Environ(), envNodes+"=")
	if os.Getenv("GORACE") == "" {
		// A race-enabled binary sleeps a second at exit by default, for
		// late reports; a report still makes it exit 66, failing the test.
		p.cmd.Env = append(p.cmd.Env, "GORACE=atexit_sleep_ms=50")
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start quorumlock: %v", err)
	}
	go func() {
		defer close(p.exited)
		p.cmd.Wait()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// wait returns the exit status, failing t if the process runs past timeout.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("quorumlock %v still running after %v\nstdout:\n%s\nstderr:\n%s",
			p.cmd.Args[1:], timeout, p.stdout.String(), p.stderr.String())
		return -1
	}
}

// runBinary runs the binary to completion and returns its status and output.
func runBinary(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := start(t, stdin, args...)
	code = p.wait(t, 30*time.Second)
	return code, p.stdout.String(), p.stderr.String()
}

// inProcess runs quorumlock's main in this process with empty stdin and no
// environment, and returns its status and output.
func inProcess(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	code = c.main(args)
	return code, out.String(), errOut.String()
}

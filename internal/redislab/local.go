package redislab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// Files a local node keeps in its data dir across restarts.
const (
	confName = "redis.conf"
	logName  = "redis.log"
)

// bindAttempts bounds the retries when a picked port is taken before
// redis-server binds it.
const bindAttempts = 5

var errPortTaken = errors.New("redislab: port taken")

// A local is a redis-server process the lab started and controls.
type local struct {
	mu    sync.Mutex
	head  []string // wrapper, redis-server, config file and the lab's fixed args
	extra []string // WithArgs, after --port so that they win
	dir   string   // data dir; also holds redis.conf and redis.log
	port  int      // fixed after the first start
	bus   int      // cluster bus port, fixed with port; 0 when not a cluster node
	keep  []string // files besides the config and the log that an empty restart keeps
	proc  *process // nil while killed
}

func newLocal(dir, bin string, cfg *config) *local {
	conf := filepath.Join(dir, confName)
	head := append(slices.Clone(cfg.wrapper), bin, conf,
		"--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no")
	l := &local{head: head, extra: cfg.args, dir: dir}
	if cfg.cluster {
		l.bus = -1 // picked with the port
	}
	if cfg.keepClusterConf {
		l.keep = []string{clusterConfName}
	}
	return l
}

func (l *local) addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(l.port))
}

// startOnFreePort writes the config and starts the process on a free
// loopback port, trying another port when the picked one was taken, until
// ctx ends.
func (l *local) startOnFreePort(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.dir, confName), []byte(Conf), 0o644); err != nil {
		return err
	}
	var err error
	for range bindAttempts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("redislab: not started: %w", context.Cause(ctx))
		}
		if l.port, err = freePort(); err != nil {
			return err
		}
		if l.bus != 0 {
			if l.bus, err = freeBusPort(); err != nil {
				return err
			}
		}
		if err = l.start(); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

// start launches the process on l.port and waits until it answers PING. On
// failure the error carries what the process logged.
func (l *local) start() error {
	logPath := filepath.Join(l.dir, logName)
	offset := fileSize(logPath)
	argv := slices.Concat(l.head, []string{"--port", strconv.Itoa(l.port)})
	if l.bus > 0 {
		argv = append(argv, "--cluster-port", strconv.Itoa(l.bus))
	}
	argv = append(argv, l.extra...)
	p, err := spawn(argv, l.dir, logPath)
	if err != nil {
		return fmt.Errorf("redislab: starting %s: %w", argv[0], err)
	}
	if err = waitPing(l.addr(), p.exited, startTimeout); err == nil {
		if err = l.ownsPort(); err == nil {
			l.proc = p
			return nil
		}
	}
	if kerr := p.kill(); kerr != nil {
		err = errors.Join(err, kerr)
	}
	logged := readFrom(logPath, offset)
	if strings.Contains(logged, "Address already in use") {
		err = errors.Join(errPortTaken, err)
	}
	return fmt.Errorf("%w\n--- %s ---\n%s", err, logPath, logged)
}

// ownsPort checks that the server answering on l.port is this node's — its
// data dir is l.dir — and not another test's that bound the port between our
// pick and our start (ours then fails to bind, but the PING is answered).
func (l *local) ownsPort() error {
	ctx, cancel := withTimeout()
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: l.addr(), ContextTimeoutEnabled: true, PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	got, err := c.ConfigGet(ctx, "dir").Result()
	if err != nil {
		return err
	}
	want, err := filepath.EvalSymlinks(l.dir)
	if err != nil {
		return err
	}
	if got["dir"] != want {
		return fmt.Errorf("%w: %s is served from %s, not %s", errPortTaken, l.addr(), got["dir"], want)
	}
	return nil
}

func (l *local) kill() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.killLocked()
}

func (l *local) killLocked() error {
	if l.proc == nil {
		return nil
	}
	err := l.proc.kill()
	l.proc = nil
	if err != nil {
		return err
	}
	return waitRefused(l.addr(), startTimeout)
}

func (l *local) restart(empty bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.killLocked(); err != nil {
		return err
	}
	if empty {
		if err := l.clearData(); err != nil {
			return err
		}
	}
	return l.start()
}

// clearData removes everything in the data dir but the config, the log and
// the files in l.keep.
func (l *local) clearData() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == confName || e.Name() == logName || slices.Contains(l.keep, e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(l.dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func (l *local) signal(sig syscall.Signal) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc == nil {
		return fmt.Errorf("redislab: %s is killed; Restart it first", l.addr())
	}
	return l.proc.signal(sig)
}

// fileSize returns the size of path, 0 if it does not exist.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail bounds how much of a log an error carries.
const logTail = 4 << 10

// readFrom returns the text of path from offset on, at most its last
// logTail bytes.
func readFrom(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	b = b[min(offset, int64(len(b))):]
	return string(b[max(0, len(b)-logTail):])
}

// startLocal starts n local redis-server processes in parallel.
func startLocal(t testing.TB, n int, cfg *config) *Lab {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "no redis-server on PATH")
	}
	if len(cfg.wrapper) > 0 {
		if _, err := exec.LookPath(cfg.wrapper[0]); err != nil {
			unavailable(t, fmt.Sprintf("wrapper %q not on PATH", cfg.wrapper[0]))
		}
	}
	locals := newLocals(t.TempDir(), bin, n, cfg)
	t.Cleanup(func() { stopLocals(t, locals) })
	return localLab(t, locals, startLocals(locals))
}

// newLocals returns n nodes with data dirs node1..noden under base.
func newLocals(base, bin string, n int, cfg *config) []*local {
	locals := make([]*local, n)
	for i := range locals {
		locals[i] = newLocal(filepath.Join(base, fmt.Sprintf("node%d", i+1)), bin, cfg)
	}
	return locals
}

// startLocals starts every node in parallel and returns each one's error.
// The start waits for every node and stops at the first failure: the
// others then try no further port (errgroup).
func startLocals(locals []*local) []error {
	errs := make([]error, len(locals))
	g, ctx := errgroup.WithContext(context.Background())
	for i, l := range locals {
		g.Go(func() error {
			errs[i] = l.startOnFreePort(ctx)
			return errs[i]
		})
	}
	_ = g.Wait() // every node's error is in errs, for the caller to report
	return errs
}

// localLab fails t, logging each failed node's output, unless all started.
func localLab(t testing.TB, locals []*local, errs []error) *Lab {
	t.Helper()
	lab := &Lab{Nodes: make([]*Node, len(locals))}
	failed := 0
	for i, l := range locals {
		if errs[i] != nil {
			failed++
			t.Logf("redislab: node %d: %v", i+1, errs[i])
		}
		lab.Nodes[i] = &Node{addr: l.addr(), local: l}
	}
	if failed > 0 {
		t.Fatalf("redislab: %d of %d redis-server processes failed to start", failed, len(locals))
	}
	return lab
}

// stopLocals kills every process, reporting failures without stopping.
func stopLocals(t testing.TB, locals []*local) {
	for _, l := range locals {
		if err := l.kill(); err != nil {
			t.Errorf("redislab: stopping %s: %v", l.addr(), err)
		}
	}
}

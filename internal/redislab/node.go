package redislab

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Node is one Redis master of a Lab. Its methods are safe for concurrent
// use. Kill, Restart, Pause and Resume need a Controllable node; on any
// other they return an error and change nothing.
type Node struct {
	addr  string
	local *local // nil unless the lab started this node as a local process
}

var errNotControllable = errors.New("redislab: node is not a local process started by the lab")

// Addr returns the host:port that clients dial. It does not change across
// restarts.
func (n *Node) Addr() string { return n.addr }

// Controllable reports whether the node is a local process the lab started,
// so that Kill, Restart, Pause and Resume work.
func (n *Node) Controllable() bool { return n.local != nil }

// Kill sends SIGKILL to the node's process group and returns once the
// process has exited and its port refuses connections. Killing a node that
// is not running is a no-op.
func (n *Node) Kill() error {
	if err := n.control(); err != nil {
		return err
	}
	return n.local.kill()
}

// Restart kills the node if it is running, then starts it again on the same
// port and returns once it answers PING. With empty, the data dir is cleared
// first: the node comes back without the keys it held (a restart without
// persistence); otherwise it reloads its append-only file.
func (n *Node) Restart(empty bool) error {
	if err := n.control(); err != nil {
		return err
	}
	return n.local.restart(empty)
}

// Pause stops the node's processes with SIGSTOP: connections stay open and
// commands hang until Resume.
func (n *Node) Pause() error {
	if err := n.control(); err != nil {
		return err
	}
	return n.local.signal(syscall.SIGSTOP)
}

// Resume continues a paused node with SIGCONT.
func (n *Node) Resume() error {
	if err := n.control(); err != nil {
		return err
	}
	return n.local.signal(syscall.SIGCONT)
}

// RunID returns the node's INFO server run_id, which changes at every start
// of the server process.
func (n *Node) RunID(ctx context.Context) (string, error) {
	c := n.client()
	defer c.Close()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("redislab: INFO on %s: %w", n.addr, err)
	}
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id, nil
		}
	}
	return "", fmt.Errorf("redislab: no run_id in INFO server of %s", n.addr)
}

func (n *Node) control() error {
	if n.local == nil {
		return fmt.Errorf("%w: %s", errNotControllable, n.addr)
	}
	return nil
}

// options returns the default client options of Lab.Clients.
func (n *Node) options() *redis.Options {
	return &redis.Options{
		Addr:         n.addr,
		DialTimeout:  time.Second,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
	}
}

// client returns a short-lived client for the lab's own commands, bounded
// by the caller's context.
func (n *Node) client() *redis.Client {
	opt := n.options()
	opt.ContextTimeoutEnabled = true
	opt.PoolSize = 1
	return redis.NewClient(opt)
}

func (n *Node) flushAll() error {
	ctx, cancel := withTimeout()
	defer cancel()
	c := n.client()
	defer c.Close()
	return c.FlushAll(ctx).Err()
}

// ScriptCalls returns, per client in nodes, how many scripts its server has
// run (EVALSHA and EVAL calls, from INFO commandstats), failing t on error.
func ScriptCalls(t testing.TB, nodes []redis.UniversalClient) []int64 {
	t.Helper()
	return CommandCalls(t, nodes, "evalsha", "eval")
}

// CommandCalls returns, per client in nodes, how many calls of cmds (named
// as INFO commandstats names them: "hset", "evalsha") its server has run,
// the calls scripts make included, failing t on error.
func CommandCalls(t testing.TB, nodes []redis.UniversalClient, cmds ...string) []int64 {
	t.Helper()
	out := make([]int64, len(nodes))
	for i, n := range nodes {
		ctx, cancel := withTimeout()
		info, err := n.Info(ctx, "commandstats").Result()
		cancel()
		if err != nil {
			t.Fatalf("redislab: INFO commandstats: %v", err)
		}
		for line := range strings.Lines(info) {
			for _, cmd := range cmds {
				if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
					calls, _, _ := strings.Cut(rest, ",")
					v, _ := strconv.ParseInt(calls, 10, 64)
					out[i] += v
				}
			}
		}
	}
	return out
}

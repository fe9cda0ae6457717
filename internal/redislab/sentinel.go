package redislab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A SentinelSet is one Sentinel-managed master set started for a test: a
// master and one replica of it (Lab's nodes 0 and 1 at the start), watched
// under Name by sentinels (redis-server --sentinel). Failover promotes the
// replica through the sentinels, as an operator's SENTINEL FAILOVER does.
type SentinelSet struct {
	Name      string
	Lab       *Lab     // the data nodes: 0 the first master, 1 its replica
	Sentinels []string // the sentinels' addresses
	procs     []*process
}

// sentinelDownAfter is how long a sentinel waits before it deems a silent
// master down: short, so that a test's failover does not wait for long.
const sentinelDownAfter = 1000

// StartSentinel starts a master, its replica and n sentinels watching it
// under name, stopped in t.Cleanup, and returns once every sentinel knows
// the replica and the replica is in sync. It skips or fails t as Start
// does when no server can be had.
func StartSentinel(t testing.TB, name string, n int) *SentinelSet {
	t.Helper()
	lab := Start(t, 2, WithArgs("--appendonly", "no"))
	lab.RequireControl(t)
	s := &SentinelSet{Name: name, Lab: lab}
	ctx, cancel := context.WithTimeout(context.Background(), 4*startTimeout)
	defer cancel()
	master, replica := lab.Nodes[0], lab.Nodes[1]
	host, port, _ := net.SplitHostPort(master.Addr())
	if err := replica.do(ctx, "REPLICAOF", host, port); err != nil {
		t.Fatalf("redislab: REPLICAOF: %v", err)
	}
	bin, err := exec.LookPath("redis-server") // Start found it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range s.procs {
			_ = p.kill()
		}
	})
	for i := range n {
		addr, p, err := startSentinel(t.TempDir(), bin, name, master.Addr())
		if err != nil {
			t.Fatalf("redislab: sentinel %d: %v", i, err)
		}
		s.Sentinels, s.procs = append(s.Sentinels, addr), append(s.procs, p)
	}
	if err := s.settled(ctx, replica); err != nil {
		t.Fatalf("redislab: sentinel set %s: %v", name, err)
	}
	return s
}

// startSentinel starts one sentinel in dir watching the master at addr
// under name, on a free port, and waits until it answers PING.
func startSentinel(dir, bin, name, addr string) (string, *process, error) {
	host, port, _ := net.SplitHostPort(addr)
	for range bindAttempts {
		p, err := freePort()
		if err != nil {
			return "", nil, err
		}
		conf := filepath.Join(dir, "sentinel.conf") // a sentinel rewrites its own config
		body := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsentinel monitor %s %s %s 1\n", p, dir, name, host, port) +
			fmt.Sprintf("sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 5000\n", name, sentinelDownAfter, name)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return "", nil, err
		}
		logPath := filepath.Join(dir, logName)
		proc, err := spawn([]string{bin, conf, "--sentinel"}, dir, logPath)
		if err != nil {
			return "", nil, err
		}
		a := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		if err = waitPing(a, proc.exited, startTimeout); err == nil {
			return a, proc, nil
		}
		_ = proc.kill()
		if !errors.Is(err, errExited) {
			return "", nil, fmt.Errorf("%w\n--- %s ---\n%s", err, logPath, readFrom(logPath, 0))
		}
	}
	return "", nil, errPortTaken
}

// settled waits until every sentinel knows replica as a replica of the
// master, and replica is in sync with it.
func (s *SentinelSet) settled(ctx context.Context, replica *Node) error {
	if err := waitFor(ctx, "the replica in sync", func() (bool, error) {
		return replica.infoHas(ctx, "master_link_status:up", "INFO", "replication")
	}); err != nil {
		return err
	}
	for _, addr := range s.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		err := waitFor(ctx, "every sentinel knows the replica", func() (bool, error) {
			replicas, err := sc.Replicas(ctx, s.Name).Result()
			return err == nil && len(replicas) > 0, nil
		})
		sc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// MasterAddr returns the address the first sentinel names for the set's
// master.
func (s *SentinelSet) MasterAddr(ctx context.Context) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0]})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, s.Name).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// Client returns a go-redis failover client of the set (closed in
// t.Cleanup), tuned by tune.
func (s *SentinelSet) Client(t testing.TB, tune ...func(*redis.FailoverOptions)) *redis.Client {
	t.Helper()
	o := &redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: s.Sentinels}
	for _, f := range tune {
		f(o)
	}
	c := redis.NewFailoverClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// Failover asks the first sentinel to fail the master over (SENTINEL
// FAILOVER) and returns once every sentinel names the new master and it
// says it is one. With one replica, the new master is the old replica; the
// old master turns into its replica.
func (s *SentinelSet) Failover(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 4*startTimeout)
	defer cancel()
	old, err := s.MasterAddr(ctx)
	if err != nil {
		return err
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinels[0]})
	defer sc.Close()
	if err := sc.Failover(ctx, s.Name).Err(); err != nil {
		return fmt.Errorf("redislab: SENTINEL FAILOVER: %w", err)
	}
	return waitFor(ctx, "every sentinel names a new master, which says it is one", func() (bool, error) {
		var named string
		for _, addr := range s.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: addr})
			hp, err := c.GetMasterAddrByName(ctx, s.Name).Result()
			c.Close()
			if err != nil || net.JoinHostPort(hp[0], hp[1]) == old || named != "" && net.JoinHostPort(hp[0], hp[1]) != named {
				return false, nil
			}
			named = net.JoinHostPort(hp[0], hp[1])
		}
		for _, n := range s.Lab.Nodes {
			if n.Addr() == named {
				return n.infoHas(ctx, "role:master", "INFO", "replication")
			}
		}
		return false, fmt.Errorf("redislab: the sentinels name %s, no node of the set", named)
	})
}

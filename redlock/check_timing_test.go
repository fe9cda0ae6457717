package redlock_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

func TestCheckRoundTrip(t *testing.T) {
	nodes, l := trustedLab(t, 3)
	p := faultproxy.Start(t, l.Nodes[2].Addr())
	p.SetLatency(10*time.Millisecond, 10*time.Millisecond)
	slow := redis.NewClient(&redis.Options{Addr: p.Addr()})
	t.Cleanup(func() { slow.Close() })
	// A 20 ms round trip against a 15 ms node timeout.
	rep := runCheck(t, []redis.UniversalClient{nodes[0], nodes[1], slow},
		redlock.WithClockSample(0), redlock.WithNodeTimeout(15*time.Millisecond), redlock.WithTTL(time.Second))
	wantSeverity(t, rep, 2, "rtt", redlock.SeverityFail, "p99")
}

// fastClock runs a redis-server whose clock runs 5% fast: faketime, with
// another allocator preloaded, since Debian's redis-server allocates with
// jemalloc, which hangs under libfaketime (see chaos/clock_test.go).
func fastClock(t *testing.T) []string {
	t.Helper()
	for _, pattern := range []string{"/usr/lib/*/libtcmalloc_minimal.so.4", "/usr/lib/*/libmimalloc.so.2"} {
		if found, _ := filepath.Glob(pattern); len(found) > 0 {
			return []string{"env", "LD_PRELOAD=" + found[0], "faketime", "-f", "+0 x1.05"}
		}
	}
	why := "no libtcmalloc_minimal.so.4 or libmimalloc.so.2 to run redis-server under faketime (Debian: apt-get install -y faketime libtcmalloc-minimal4)"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return nil
}

func TestCheckClockRate(t *testing.T) {
	fast := redislab.Start(t, 1, redislab.WithWrapper(fastClock(t)...))
	fast.Trust(t, redlock.TrustStart)
	nodes, _ := trustedLab(t, 2)
	rep := runCheck(t, append(fast.Clients(t), nodes...), redlock.WithClockSample(time.Second))
	wantSeverity(t, rep, 0, "clock", redlock.SeverityFail, "rate 1.0")
	var rate float64
	if _, err := fmt.Sscanf(finding(t, rep, 0, "clock").Got, "rate %g", &rate); err != nil || rate < 1.04 || rate > 1.06 {
		t.Errorf("fast master's rate %v (%v), want about 1.05", rate, err)
	}
	wantSeverity(t, rep, 1, "clock", redlock.SeverityOK, "rate ")
}

func TestCheckYoungMasters(t *testing.T) {
	l := redislab.Start(t, 3)
	nodes := l.Clients(t)
	if err := redlock.TrustStart(t.Context(), nodes[0]); err != nil {
		t.Fatal(err)
	}
	rep := runCheck(t, nodes, redlock.WithClockSample(0))
	wantSeverity(t, rep, 0, "start", redlock.SeverityOK, "vouched for")
	wantSeverity(t, rep, 1, "start", redlock.SeverityWarn, "up ")
	if f := finding(t, rep, 1, "start"); !strings.Contains(f.Why, "more") {
		t.Errorf("young master's why %q does not say how long its guard lasts", f.Why)
	}
	wantSeverity(t, rep, -1, "start", redlock.SeverityWarn, "fewer than 2")
}

func TestCheckMemberCount(t *testing.T) {
	nodes, _ := trustedLab(t, 2)
	rep := runCheck(t, nodes, redlock.WithClockSample(0))
	wantSeverity(t, rep, -1, "members", redlock.SeverityWarn, "2 masters")
	if f := finding(t, rep, -1, "members"); !strings.Contains(f.Why, "no fault tolerance") {
		t.Errorf("2 masters: why %q", f.Why)
	}
}

func TestCheckUnreachable(t *testing.T) {
	nodes, _ := trustedLab(t, 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dead := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { dead.Close() })
	rep := runCheck(t, append(nodes, dead), redlock.WithClockSample(0))
	wantSeverity(t, rep, 2, "reach", redlock.SeverityFail, "")
	if rep.Reachable != 2 || !rep.Majority() {
		t.Errorf("reachable %d, majority %v; want 2, true", rep.Reachable, rep.Majority())
	}
}

func TestCheckRefusesBadInput(t *testing.T) {
	nodes, _ := trustedLab(t, 1)
	for name, call := range map[string]func() error{
		"no nodes":        func() error { _, err := redlock.Check(t.Context(), nil); return err },
		"nil node":        func() error { _, err := redlock.Check(t.Context(), []redis.UniversalClient{nil}); return err },
		"negative sample": func() error { _, err := redlock.Check(t.Context(), nodes, redlock.WithClockSample(-1)); return err },
		"bad TTL":         func() error { _, err := redlock.Check(t.Context(), nodes, redlock.WithTTL(-1)); return err },
	} {
		if err := call(); !errors.Is(err, redlock.ErrInvalid) || !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

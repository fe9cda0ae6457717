package testkit_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// dialChild, set in the environment, makes this test binary a child whose
// TestMain is testkit.Main and whose one test dials a closed port.
const dialChild = "TESTKIT_DIAL_CHILD"

// TestMainQuietsRedis: a package whose TestMain is testkit.Main prints no
// go-redis log line when a dial fails, and does with REDIS_LOG=1.
func TestMainQuietsRedis(t *testing.T) {
	for _, c := range []struct {
		env   string
		noisy bool
	}{{"", false}, {"REDIS_LOG=1", true}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDialClosedPort$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), dialChild+"=1", "REDIS_LOG=")
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child (%q): %v\n%s", c.env, err, out)
		}
		if !strings.Contains(string(out), "dialed a closed port") {
			t.Fatalf("child (%q) did not dial:\n%s", c.env, out)
		}
		if got := strings.Contains(string(out), "failed to dial"); got != c.noisy {
			t.Errorf("child (%q) logged \"failed to dial\": %v, want %v:\n%s", c.env, got, c.noisy, out)
		}
	}
}

// TestDialClosedPort runs only in the child: one dial refused, which
// go-redis logs unless its logger is quiet.
func TestDialClosedPort(t *testing.T) {
	if os.Getenv(dialChild) == "" {
		t.Skip("the child of TestMainQuietsRedis")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialerRetries: 1, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatalf("ping of closed port %s succeeded", addr)
	}
	t.Log("dialed a closed port")
}

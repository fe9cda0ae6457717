package redlock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/redlock"
)

func TestNewRefusesBadInput(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2"})
	aAlias := redis.NewClient(&redis.Options{Addr: "localhost:1", DB: 3})
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:3"}})
	t.Cleanup(func() { a.Close(); b.Close(); aAlias.Close(); failover.Close() })
	var typedNil *redis.Client
	cases := []struct {
		name  string
		nodes []redis.UniversalClient
		opts  []redlock.Option
		want  string
	}{
		{"no nodes", nil, nil, "no nodes"},
		{"nil node", []redis.UniversalClient{a, nil}, nil, "node 1 is nil"},
		{"typed nil node", []redis.UniversalClient{a, typedNil}, nil, "node 1 is nil"},
		{"same client twice", []redis.UniversalClient{a, b, a}, nil, "same master"},
		{"same address twice", []redis.UniversalClient{a, aAlias}, nil, "same master"},
		{"same failover client twice", []redis.UniversalClient{failover, b, failover}, nil, "same master"},
		{"zero TTL", []redis.UniversalClient{a}, []redlock.Option{redlock.WithTTL(0)}, "TTL"},
		{"negative TTL", []redis.UniversalClient{a}, []redlock.Option{redlock.WithTTL(-time.Second)}, "TTL"},
		{"TTL within drift+timeout", []redis.UniversalClient{a},
			[]redlock.Option{redlock.WithTTL(30 * time.Millisecond), redlock.WithNodeTimeout(28 * time.Millisecond)}, "too short"},
		{"TTL whose validity cannot hold the loss margin", []redis.UniversalClient{a},
			[]redlock.Option{redlock.WithTTL(30 * time.Millisecond)}, "loss margin"},
		{"brace in prefix", []redis.UniversalClient{a}, []redlock.Option{redlock.WithPrefix("svc}")}, "brace"},
		{"retention not above TTL", []redis.UniversalClient{a}, []redlock.Option{redlock.WithFenceRetention(redlock.DefaultTTL)}, "retention"},
		{"zero node timeout", []redis.UniversalClient{a}, []redlock.Option{redlock.WithNodeTimeout(0)}, "node timeout"},
		{"negative drift", []redis.UniversalClient{a}, []redlock.Option{redlock.WithDriftFactor(-0.1)}, "drift"},
		{"drift of one", []redis.UniversalClient{a}, []redlock.Option{redlock.WithDriftFactor(1)}, "drift"},
		{"NaN drift", []redis.UniversalClient{a}, []redlock.Option{redlock.WithDriftFactor(math.NaN())}, "drift"},
		{"zero max wait", []redis.UniversalClient{a}, []redlock.Option{redlock.WithMaxWait(0)}, "max wait"},
		{"inverted retry", []redis.UniversalClient{a}, []redlock.Option{redlock.WithRetryDelay(time.Second, time.Millisecond)}, "retry"},
		{"nil option", []redis.UniversalClient{a}, []redlock.Option{nil}, "nil Option"},
		{"nil clock", []redis.UniversalClient{a}, []redlock.Option{redlock.WithClock(nil)}, "clock"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.New(tc.nodes, tc.opts...)
			if err == nil {
				c.Close()
				t.Fatal("New succeeded, want an error")
			}
			if !errors.Is(err, redlock.ErrInvalid) || !strings.HasPrefix(err.Error(), "redlock: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %q, want a redlock: ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

// Bad per-call input is refused before anything is sent: no node gets a key.
func TestCallsRefuseBadInputAndChangeNothing(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	calls := map[string]func() error{
		"TryLock empty key": func() error { _, err := c.TryLock(ctx, ""); return err },
		"Lock empty key":    func() error { _, err := c.Lock(ctx, ""); return err },
		"Do empty key":      func() error { return c.Do(ctx, "", func(context.Context) error { return nil }) },
		"Do nil fn":         func() error { return c.Do(ctx, "k", nil) },
		"TryLock bad TTL":   func() error { _, err := c.TryLock(ctx, "k", redlock.WithTTL(-1)); return err },
		"Lock bad drift":    func() error { _, err := c.Lock(ctx, "k", redlock.WithDriftFactor(2)); return err },
		"Do bad timeout": func() error {
			return c.Do(ctx, "k", func(context.Context) error { return nil }, redlock.WithNodeTimeout(-1))
		},
		// A key is a name, not a payload: over MaxKeyLen it is refused, and
		// the error does not carry it whole.
		"TryLock 1 MiB key": func() error { _, err := c.TryLock(ctx, strings.Repeat("k", 1<<20)); return err },
		// 30 ms leaves 7.7 ms of validity after a 25 ms node timeout: less
		// than the loss margin, so the loss could not be signalled in time.
		"TryLock 30ms TTL": func() error {
			_, err := c.TryLock(ctx, "k", redlock.WithTTL(30*time.Millisecond), redlock.WithNodeTimeout(redlock.DefaultNodeTimeout))
			return err
		},
		"TryLock brace prefix":    func() error { _, err := c.TryLock(ctx, "k", redlock.WithPrefix("app{1}:")); return err },
		"TryLock short retention": func() error { _, err := c.TryLock(ctx, "k", redlock.WithFenceRetention(time.Second)); return err },
		// One clock paces all of a Client's renewals: it is New's option.
		"TryLock per-call clock": func() error { _, err := c.TryLock(ctx, "k", redlock.WithClock(clock.NewFake(time.Now()))); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, redlock.ErrInvalid) || !strings.HasPrefix(err.Error(), "redlock: ") {
			t.Errorf("%s: error = %.200v, want redlock: ErrInvalid", name, err)
		}
		if err != nil && len(err.Error()) > 2*redlock.MaxKeyLen {
			t.Errorf("%s: error is %d bytes long, want the key cut short", name, len(err.Error()))
		}
	}
	for i, n := range nodes {
		// The lab's vouch for its masters (TrustStart) is the only key.
		if keys, err := n.Keys(ctx, "*").Result(); err != nil || len(keys) != 1 || keys[0] != redlock.TrustKey {
			t.Errorf("node %d: keys after refused calls = %v (err %v), want none", i, keys, err)
		}
	}
}

func TestReleasedLockRefusesUnlockAndExtend(t *testing.T) {
	c, _, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("second Unlock = %v, want ErrNotHeld", err)
	}
	if err := l.Extend(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Extend after Unlock = %v, want ErrNotHeld", err)
	}
	if err := l.Err(); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Err after Unlock = %v, want ErrNotHeld", err)
	}
	select {
	case <-l.Done():
	default:
		t.Error("Done not closed after Unlock")
	}
}

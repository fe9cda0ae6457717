package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// dbSizes returns each node's number of keys.
func dbSizes(t *testing.T, ctx context.Context, nodes []redis.UniversalClient) []int64 {
	t.Helper()
	sizes := make([]int64, len(nodes))
	for i, n := range nodes {
		s, err := n.DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("node %d: DBSIZE: %v", i, err)
		}
		sizes[i] = s
	}
	return sizes
}

// requireInvalid fails t unless err is a one-line ErrInvalid starting with
// "redlock:" and mentioning want.
func requireInvalid(t *testing.T, name string, err error, want string) {
	t.Helper()
	if !errors.Is(err, redlock.ErrInvalid) || !strings.HasPrefix(err.Error(), "redlock: ") ||
		strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want) {
		t.Errorf("%s = %v, want a one-line redlock: ErrInvalid mentioning %q", name, err, want)
	}
}

// A nil ctx is refused with ErrInvalid by every call that takes one, and
// nothing is sent: no call panics, no node gets a key.
func TestNilContextIsRefused(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	held, err := c.Lock(ctx, "held")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer held.Unlock(ctx)
	before := dbSizes(t, ctx, nodes)
	var nilCtx context.Context
	nop := func(context.Context) error { return nil }
	calls := map[string]func() error{
		"Lock":        func() error { _, err := c.Lock(nilCtx, "k"); return err },
		"TryLock":     func() error { _, err := c.TryLock(nilCtx, "k"); return err },
		"RLock":       func() error { _, err := c.RLock(nilCtx, "k"); return err },
		"TryRLock":    func() error { _, err := c.TryRLock(nilCtx, "k"); return err },
		"LockMany":    func() error { _, err := c.LockMany(nilCtx, []string{"a", "b"}); return err },
		"TryLockMany": func() error { _, err := c.TryLockMany(nilCtx, []string{"a", "b"}); return err },
		"Acquire":     func() error { _, err := c.Acquire(nilCtx, "pool", 2); return err },
		"TryAcquire":  func() error { _, err := c.TryAcquire(nilCtx, "pool", 2); return err },
		"Do":          func() error { return c.Do(nilCtx, "k", nop) },
		"Extend":      func() error { return held.Extend(nilCtx) },
		"Unlock":      func() error { return held.Unlock(nilCtx) },
		"Run":         func() error { return held.Run(nilCtx, nop) },
	}
	for name, call := range calls {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s(nil ctx) panicked: %v", name, r)
				}
			}()
			requireInvalid(t, name+"(nil ctx)", call(), "nil context")
		}()
	}
	if after := dbSizes(t, ctx, nodes); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("keys per node %v after the refused calls, want %v", after, before)
	}
	if held.Err() != nil {
		t.Errorf("the held lock ended: %v", held.Err())
	}
}

// More keys than MaxKeys are refused with nothing written; MaxKeys keys are
// taken — on real masters, with the default node timeout.
func TestMaxKeys(t *testing.T) {
	c, nodes, _ := lab(t, 3, redlock.WithNodeTimeout(redlock.DefaultNodeTimeout))
	ctx := ctxFor(t, 30*time.Second)
	before := dbSizes(t, ctx, nodes)
	for _, n := range []int{redlock.MaxKeys + 1, 20000} {
		keys := manyKeys(n)
		_, err := c.TryLockMany(ctx, keys)
		requireInvalid(t, fmt.Sprintf("TryLockMany(%d keys)", n), err, "MaxKeys")
		_, err = c.LockMany(ctx, keys)
		requireInvalid(t, fmt.Sprintf("LockMany(%d keys)", n), err, "MaxKeys")
	}
	if after := dbSizes(t, ctx, nodes); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("keys per node %v after the refused calls, want %v", after, before)
	}
	l, err := c.LockMany(ctx, manyKeys(redlock.MaxKeys))
	if err != nil {
		t.Fatalf("LockMany(MaxKeys = %d keys) with the default node timeout: %v", redlock.MaxKeys, err)
	}
	if got := len(l.Keys()); got != redlock.MaxKeys {
		t.Errorf("holds %d keys, want %d", got, redlock.MaxKeys)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock of MaxKeys keys: %v", err)
	}
}

func manyKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("many:%d", i)
	}
	return keys
}

// Every duration option is bounded by MaxDuration, so that nothing derived
// from it overflows (the queue lease is 5·max retry + node timeout): the
// error names the option and the bound, in New and per call; at the bound
// the option is accepted.
func TestDurationOptionsAreBounded(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	huge := time.Duration(1<<63 - 1)
	over := redlock.MaxDuration + time.Millisecond
	cases := map[string]redlock.Option{
		"TTL":             redlock.WithTTL(over),
		"node timeout":    redlock.WithNodeTimeout(over),
		"max wait":        redlock.WithMaxWait(huge),
		"retry delay max": redlock.WithRetryDelay(time.Millisecond, huge),
		"retry delay min": redlock.WithRetryDelay(over, over),
		"restart guard":   redlock.WithRestartGuard(over),
		"fence retention": redlock.WithFenceRetention(huge),
	}
	before := dbSizes(t, ctx, nodes)
	for name, opt := range cases {
		_, err := redlock.New(nodes, opt)
		requireInvalid(t, "New with "+name, err, name)
		requireInvalid(t, "New with "+name, err, "MaxDuration")
		_, err = c.Lock(ctx, "k", opt)
		requireInvalid(t, "Lock with "+name, err, "MaxDuration")
	}
	if after := dbSizes(t, ctx, nodes); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("keys per node %v after the refused calls, want %v", after, before)
	}
	// At the bound: accepted, and the waiter is in line on every node.
	held, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.Lock(wctx, "k", redlock.WithRetryDelay(time.Millisecond, redlock.MaxDuration), redlock.WithOwner("patient"))
	eventually(t, 5*time.Second, "the waiter with the longest retry delay in line on every node", func() bool {
		return inLine(t, nodes, "k", "patient") == len(nodes)
	})
	cancel()
	held.Unlock(ctx)
}

// New accepts 2 and 4 masters, and warns through the logger that they
// tolerate no more failures than one fewer; 3 and 5 draw no warning.
func TestEvenNodeCountWarns(t *testing.T) {
	for n := 1; n <= 5; n++ {
		var buf testkit.Buffer
		logger := slog.New(slog.NewJSONHandler(&buf, nil))
		nodes := make([]redis.UniversalClient, n)
		for i := range nodes {
			rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", i+1)})
			t.Cleanup(func() { rdb.Close() })
			nodes[i] = rdb
		}
		c, err := redlock.New(nodes, redlock.WithLogger(logger))
		if err != nil {
			t.Fatalf("New with %d nodes: %v", n, err)
		}
		c.Close()
		warned := strings.Contains(buf.String(), `"level":"WARN"`) && strings.Contains(buf.String(), "even number of masters")
		if warned != (n%2 == 0) {
			t.Errorf("New with %d nodes: warned = %v, want %v (log %q)", n, warned, n%2 == 0, buf.String())
		}
	}
}

// A contended TryLock is logged at Debug, not Info: a leader polling in a
// loop would flood the log. A Lock that gave up waiting is logged at Info.
func TestContendedTryLockLogsAtDebug(t *testing.T) {
	var buf testkit.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, _, _ := lab(t, 3, redlock.WithLogger(logger))
	ctx := ctxFor(t, 10*time.Second)
	held, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	defer held.Unlock(ctx)
	if _, err := c.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock of a held key = %v", err)
	}
	first := buf.String()
	if !strings.Contains(first, `"level":"DEBUG","msg":"redlock: lock not obtained"`) || strings.Contains(first, `"level":"INFO"`) {
		t.Errorf("contended TryLock logged %q, want one Debug record", first)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Lock(short, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held key = %v", err)
	}
	if got := buf.String()[len(first):]; !strings.Contains(got, `"level":"INFO","msg":"redlock: lock not obtained"`) {
		t.Errorf("Lock that gave up logged %q, want an Info record", got)
	}
}

// The habit "defer l.Unlock(ctx)" is harmless around Run: once Run has
// released the lock, Unlock returns nil. Without Run, a second Unlock
// still returns ErrNotHeld.
func TestUnlockAfterRunIsHarmless(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := l.Run(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock after Run = %v, want nil", err)
	}
	if n := countHeld(t, nodes, "k"); n != 0 {
		t.Errorf("key held on %d nodes after Run", n)
	}
	plain, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := plain.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := plain.Unlock(ctx); !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("second Unlock without Run = %v, want ErrNotHeld", err)
	}
}

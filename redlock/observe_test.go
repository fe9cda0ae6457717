package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// WithLogger is quiet on the healthy path and logs, as structured records,
// acquisitions that failed, node errors, failed renewals and the loss.
func TestLoggerReportsFailuresOnly(t *testing.T) {
	var buf testkit.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	c, proxies, _ := faultLab(t, 3, redlock.WithLogger(logger), redlock.WithNodeTimeout(faultTimeout), redlock.WithTTL(400*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if got := buf.String(); got != "" {
		t.Fatalf("healthy path logged %q, want nothing", got)
	}
	for _, p := range proxies[:2] {
		p.SetBlackhole(true)
	}
	<-l.Done()
	if _, err := c.TryLock(ctx, "other"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock with 2 of 3 blackholed = %v", err)
	}
	eventually(t, 2*time.Second, "the failed acquisition logged", func() bool {
		return strings.Contains(buf.String(), `"msg":"redlock: lock not obtained"`)
	})
	logged := buf.String()
	for _, want := range []string{`"msg":"redlock: lock lost"`, `"msg":"redlock: renewal failed"`, `"msg":"redlock: node call failed"`, `"key":"k"`, `"op":"extend"`} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s:\n%s", want, logged)
		}
	}
}

func TestObserversAreClientOptions(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	_, err := c.TryLock(context.Background(), "k", redlock.WithLogger(slog.Default()))
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "options of New") {
		t.Fatalf("per-call WithLogger = %v, want ErrInvalid naming New", err)
	}
	if _, err := redlock.New(nodes, redlock.WithObserver(nil)); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "nil Observer") {
		t.Fatalf("New with a nil Observer = %v, want ErrInvalid naming it", err)
	}
}

package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// ctxFor returns a context that ends after d, or when the test does.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds, failing t after d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// direct returns a client of addr whose calls end with their context (the
// Clusters' clients keep go-redis's default read timeout of seconds),
// closed when t ends.
func direct(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialerRetries: 1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// votes returns each node's vote error of a failed acquisition, or fails t.
func votes(t testing.TB, err error) []error {
	t.Helper()
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotObtained) || !errors.As(err, &qe) {
		t.Fatalf("err = %v; want ErrNotObtained with a QuorumError", err)
	}
	out := make([]error, len(qe.Votes))
	for _, v := range qe.Votes {
		out[v.Node] = v.Err
	}
	return out
}

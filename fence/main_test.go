package fence_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/fence"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m)
}

// store starts one redis-server, the protected resource, and returns a
// store on it and the raw client, for looking behind the store's back.
func store(t *testing.T) (*fence.Redis, redis.UniversalClient) {
	t.Helper()
	c := redislab.Start(t, 1).Clients(t)[0]
	return fence.NewRedis(c), c
}

// ctxFor is a context that ends after d, or with the test.
var ctxFor = testkit.Context

// mustSet fails t unless the Set is accepted.
func mustSet(t *testing.T, s *fence.Redis, key, value string, token int64) {
	t.Helper()
	if err := s.Set(ctxFor(t, 10*time.Second), key, value, token); err != nil {
		t.Fatalf("Set(%q, %q, %d) = %v, want nil", key, value, token, err)
	}
}

// requireStored fails t unless key holds value under token (value "" with
// absent set: no value, only the token).
func requireStored(t *testing.T, s *fence.Redis, key, value string, token int64, absent bool) {
	t.Helper()
	got, tok, err := s.Get(ctxFor(t, 10*time.Second), key)
	switch {
	case absent && err != redis.Nil:
		t.Fatalf("Get(%q) = %q, %d, %v; want redis.Nil", key, got, tok, err)
	case !absent && err != nil:
		t.Fatalf("Get(%q): %v", key, err)
	case got != value || tok != token:
		t.Fatalf("Get(%q) = %q, %d; want %q, %d", key, got, tok, value, token)
	}
}

// requireStale fails t unless err is a *StaleError for key, token, seen.
func requireStale(t *testing.T, err error, key string, token, seen int64) {
	t.Helper()
	var se *fence.StaleError
	if !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *StaleError matching ErrStale", err)
	}
	if se.Key != key || se.Token != token || se.Seen != seen {
		t.Fatalf("StaleError = %+v, want key %q, token %d, seen %d", *se, key, token, seen)
	}
}

// dbsize returns how many keys the server holds.
func dbsize(t *testing.T, c redis.UniversalClient) int64 {
	t.Helper()
	n, err := c.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatalf("DBSIZE: %v", err)
	}
	return n
}

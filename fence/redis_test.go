package fence_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/fence"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestSetRefusesSmallerTokenAndWritesNothing(t *testing.T) {
	s, _ := store(t)
	ctx := ctxFor(t, 10*time.Second)
	mustSet(t, s, "k", "first", 5)
	mustSet(t, s, "k", "second", 7)
	requireStale(t, s.Set(ctx, "k", "late", 6), "k", 6, 7)
	requireStored(t, s, "k", "second", 7, false)
	if !strings.HasPrefix(s.Set(ctx, "k", "late", 6).Error(), "fence: stale token 6") {
		t.Errorf("error does not start with the package and what happened: %v", s.Set(ctx, "k", "late", 6))
	}
	mustSet(t, s, "other", "independent", 1) // tokens are per key
	requireStored(t, s, "other", "independent", 1, false)
}

func TestEqualTokenAccepted(t *testing.T) {
	s, _ := store(t)
	mustSet(t, s, "k", "a", 9)
	mustSet(t, s, "k", "b", 9) // one holder writes twice
	requireStored(t, s, "k", "b", 9, false)
	if err := s.Delete(ctxFor(t, 10*time.Second), "k", 9); err != nil {
		t.Fatalf("Delete with the equal token: %v", err)
	}
	mustSet(t, s, "k", "c", 9)
	requireStored(t, s, "k", "c", 9, false)
}

func TestGetAbsent(t *testing.T) {
	s, _ := store(t)
	requireStored(t, s, "never", "", 0, true)
}

// A Delete leaves its token behind (a tombstone): a stale Set after it is
// refused, and so is a stale Delete.
func TestDeleteLeavesTombstone(t *testing.T) {
	s, c := store(t)
	ctx := ctxFor(t, 10*time.Second)
	mustSet(t, s, "k", "v", 3)
	if err := s.Delete(ctx, "k", 4); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	requireStored(t, s, "k", "", 4, true)
	requireStale(t, s.Set(ctx, "k", "resurrected", 3), "k", 3, 4)
	requireStored(t, s, "k", "", 4, true)
	mustSet(t, s, "k", "new", 5)
	requireStale(t, s.Delete(ctx, "k", 4), "k", 4, 5)
	requireStored(t, s, "k", "new", 5, false)
	// Deleting a key never set writes its tombstone all the same.
	if err := s.Delete(ctx, "ghost", 8); err != nil {
		t.Fatalf("Delete of an absent key: %v", err)
	}
	requireStale(t, s.Set(ctx, "ghost", "late", 7), "ghost", 7, 8)
	if _, tk := fence.KeyNames("ghost"); c.TTL(ctx, tk).Val() != -1 {
		t.Errorf("tombstone has TTL %v, want none", c.TTL(ctx, tk).Val())
	}
}

// Tokens compare exactly over the whole int64 range: as doubles, tokens
// past 2^53 that differ by one would compare equal, and the stale write
// would land.
func TestTokensCompareExactly(t *testing.T) {
	s, _ := store(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, tc := range []struct {
		name           string
		accepted, late int64
	}{
		{"2^53+1 over 2^53", 1<<53 + 1, 1 << 53},
		{"MaxInt64 over MaxInt64-1", math.MaxInt64, math.MaxInt64 - 1},
		{"MaxInt64 over 2^62", math.MaxInt64, 1 << 62},
		{"1000 over 999 (lengths differ)", 1000, 999},
		{"10 over 9", 10, 9},
		{"1 over 0", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "edge:" + tc.name
			mustSet(t, s, key, "first", tc.late)
			mustSet(t, s, key, "second", tc.accepted)
			requireStale(t, s.Set(ctx, key, "late", tc.late), key, tc.late, tc.accepted)
			requireStale(t, s.Delete(ctx, key, tc.late), key, tc.late, tc.accepted)
			requireStored(t, s, key, "second", tc.accepted, false)
			mustSet(t, s, key, "equal", tc.accepted)
		})
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	s, c := store(t)
	ctx := ctxFor(t, 10*time.Second)
	nilCtx := context.Context(nil)
	for _, tc := range []struct {
		name, want string
		call       func() error
	}{
		{"empty key", "empty key", func() error { return s.Set(ctx, "", "v", 1) }},
		{"negative token", "negative token -1", func() error { return s.Set(ctx, "k", "v", -1) }},
		{"nil ctx", "nil context", func() error { return s.Set(nilCtx, "k", "v", 1) }},
		{"Delete empty key", "empty key", func() error { return s.Delete(ctx, "", 1) }},
		{"Delete negative token", "negative token", func() error { return s.Delete(ctx, "k", math.MinInt64) }},
		{"Delete nil ctx", "nil context", func() error { return s.Delete(nilCtx, "k", 1) }},
		{"SetTTL zero", "under a millisecond", func() error { return s.SetTTL(ctx, "k", "v", 1, 0) }},
		{"SetTTL negative token", "negative token", func() error { return s.SetTTL(ctx, "k", "v", -5, time.Second) }},
		{"Get empty key", "empty key", func() error { _, _, err := s.Get(ctx, ""); return err }},
		{"Get nil ctx", "nil context", func() error { _, _, err := s.Get(nilCtx, "k"); return err }},
		{"no client", "no redis client", func() error { return fence.NewRedis(nil).Set(ctx, "k", "v", 1) }},
		{"zero Redis", "no redis client", func() error { return new(fence.Redis).Delete(ctx, "k", 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, fence.ErrInvalid) || !strings.HasPrefix(err.Error(), "fence: invalid argument: ") ||
				!strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line matching ErrInvalid saying %q", err, tc.want)
			}
		})
	}
	if n := dbsize(t, c); n != 0 {
		t.Errorf("%d keys written by refused calls, want 0", n)
	}
}

// A value set with a TTL expires; its token does not, so a stale write is
// refused after the expiry too.
func TestSetTTLKeepsToken(t *testing.T) {
	s, c := store(t)
	ctx := ctxFor(t, 20*time.Second)
	if err := s.SetTTL(ctx, "k", "short-lived", 10, 300*time.Millisecond); err != nil {
		t.Fatalf("SetTTL: %v", err)
	}
	vk, tk := fence.KeyNames("k")
	if pttl := c.PTTL(ctx, vk).Val(); pttl <= 0 || pttl > 300*time.Millisecond {
		t.Fatalf("value PTTL %v, want in (0, 300ms]", pttl)
	}
	testkit.Eventually(t, 10*time.Second, "the value to expire", func() bool {
		_, _, err := s.Get(ctx, "k")
		return err == redis.Nil
	})
	requireStored(t, s, "k", "", 10, true)
	requireStale(t, s.SetTTL(ctx, "k", "late", 9, time.Minute), "k", 9, 10)
	if n := c.Exists(ctx, vk).Val(); n != 0 {
		t.Errorf("refused SetTTL wrote the value")
	}
	mustSet(t, s, "k", "forever", 11) // Set clears an earlier TTL
	if pttl := c.PTTL(ctx, vk).Val(); pttl != -1 {
		t.Errorf("after Set, value PTTL %v, want none (-1)", pttl)
	}
	if pttl := c.PTTL(ctx, tk).Val(); pttl != -1 {
		t.Errorf("token PTTL %v, want none (-1)", pttl)
	}
}

// A token key holding something that is not a token makes every write fail
// rather than guess.
func TestForeignTokenRefused(t *testing.T) {
	s, c := store(t)
	ctx := ctxFor(t, 10*time.Second)
	_, tk := fence.KeyNames("k")
	if err := c.Set(ctx, tk, "-3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, "k", "v", 1); err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("Set over a foreign token = %v, want a failure", err)
	}
	if _, _, err := s.Get(ctx, "k"); err == nil || err == redis.Nil {
		t.Fatalf("Get of a foreign token = %v, want a failure", err)
	}
}

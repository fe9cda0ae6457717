package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Fencing state that lives as long as the hold: every test here holds a
// key for longer than the fencing retention (1.2 s, with a TTL of 1 s and
// the watchdog renewing), or leaves it untouched for longer, and checks
// that no later token falls below one a live or recently live holder could
// still use.

const (
	shortTTL       = time.Second
	shortRetention = 1200 * time.Millisecond
	longHold       = 1700 * time.Millisecond // longer than the retention
)

func shortFencing() []redlock.Option {
	return []redlock.Option{redlock.WithTTL(shortTTL), redlock.WithFenceRetention(shortRetention)}
}

// A writer holds longer than the retention, then dies without Unlock (its
// Client closes): the reader that gets the key after its lease ran out
// reads a token at least the writer's, and the next writer's is larger.
func TestTokensAfterAWriterHeldPastTheRetention(t *testing.T) {
	_, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 20*time.Second)
	dying := newClient(t, nodes, shortFencing()...)
	w, err := dying.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("writer Lock: %v", err)
	}
	time.Sleep(longHold) // the work, renewed by the watchdog
	if w.Err() != nil {
		t.Fatalf("writer lost while held: %v", w.Err())
	}
	dying.Close() // dies: the lease runs out by its TTL

	requireTokensAfter(t, ctx, newClient(t, nodes, shortFencing()...), w)
}

// A key left untouched for longer than the retention has no counter left:
// a reader then reads the node's clock, at least the last writer's token,
// and the next writer's token is larger still.
func TestTokensAfterAKeyUntouchedPastTheRetention(t *testing.T) {
	c, _, _ := lab(t, 3, shortFencing()...)
	ctx := ctxFor(t, 20*time.Second)
	w, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("writer Lock: %v", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatalf("writer Unlock: %v", err)
	}
	time.Sleep(shortRetention + 300*time.Millisecond) // untouched: the counters expire
	requireTokensAfter(t, ctx, c, w)
}

// requireTokensAfter takes key "k" on c as a reader, then as a writer: the
// reader's token must be at least w's, the next writer's larger than both.
func requireTokensAfter(t *testing.T, ctx context.Context, c *redlock.Client, w *redlock.Lock) {
	t.Helper()
	r, err := c.RLock(ctx, "k")
	if err != nil {
		t.Fatalf("reader RLock: %v", err)
	}
	if r.Token() < w.Token() {
		t.Errorf("reader token = %d after the writer's %d: want at least the writer's", r.Token(), w.Token())
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatalf("reader Unlock: %v", err)
	}
	next, err := c.Lock(ctx, "k")
	if err != nil {
		t.Fatalf("next writer Lock: %v", err)
	}
	defer next.Unlock(ctx)
	if next.Token() <= max(w.Token(), r.Token()) {
		t.Errorf("next writer token = %d after %d and the reader's %d: want larger", next.Token(), w.Token(), r.Token())
	}
}

// An owner's nested hold, taken after the outer one was held (and renewed)
// for longer than the retention, gets a token at least the outer one's —
// for every kind of hold.
func TestNestedTokenInsideAHoldPastTheRetention(t *testing.T) {
	type take func(ctx context.Context, c *redlock.Client, opts ...redlock.Option) (*redlock.Lock, error)
	fence := func(key string) string { return redlock.Keys(redlock.DefaultPrefix, key).Fence }
	cases := []struct {
		name   string
		take   take
		fences func(outer *redlock.Lock) []string // the counters the outer hold's key keeps
	}{
		{"writer", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.Lock(ctx, "k", o...)
		}, func(*redlock.Lock) []string { return []string{fence("k")} }},
		{"LockMany", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.LockMany(ctx, []string{"k", "k2"}, o...)
		}, func(*redlock.Lock) []string { return []string{fence("k"), fence("k2")} }},
		{"permit", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.Acquire(ctx, "s", 2, o...)
		}, func(outer *redlock.Lock) []string {
			return []string{redlock.PermitKeys(redlock.DefaultPrefix, "s", outer.Permit()).Fence}
		}},
		{"reader", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.RLock(ctx, "k", o...)
		}, func(*redlock.Lock) []string { return []string{fence("k")} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, nodes, _ := lab(t, 3, shortFencing()...)
			ctx := ctxFor(t, 20*time.Second)
			// A writer leaves its token on the counter first: what a
			// reader reads.
			first, err := c.Lock(ctx, "k")
			if err != nil {
				t.Fatalf("first writer: %v", err)
			}
			first.Unlock(ctx)
			job := redlock.WithOwner("job")
			outer, err := tc.take(ctx, c, job)
			if err != nil {
				t.Fatalf("outer hold: %v", err)
			}
			defer outer.Unlock(ctx)
			time.Sleep(longHold) // the work, renewed by the watchdog
			if outer.Err() != nil {
				t.Fatalf("outer hold lost while held: %v", outer.Err())
			}
			kept := testkit.Count(nodes, func(n redis.UniversalClient) bool {
				return n.Exists(ctx, tc.fences(outer)...).Val() == int64(len(tc.fences(outer)))
			})
			if kept < 2 {
				t.Errorf("after %v held, %d of 3 nodes keep the fencing counters; want a majority", longHold, kept)
			}
			inner, err := tc.take(ctxFor(t, 3*time.Second), c, job)
			if err != nil {
				t.Fatalf("nested hold: %v", err)
			}
			defer inner.Unlock(ctx)
			if inner.Token() < outer.Token() {
				t.Errorf("nested token = %d inside a holding of %d: want at least the outer's", inner.Token(), outer.Token())
			}
		})
	}
}

// A holder with a short retention never shortens what one with a longer
// retention keeps: a semaphore's limit record outlives the short holder's
// retention while the long holder still holds, so another limit stays
// refused.
func TestShortRetentionKeepsTheLongerOnesRecord(t *testing.T) {
	c, nodes, _ := lab(t, 3, redlock.WithTTL(10*time.Second))
	ctx := ctxFor(t, 20*time.Second)
	long, err := c.TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("long holder: %v", err)
	}
	defer long.Unlock(ctx)
	brief, err := newClient(t, nodes, shortFencing()...).TryAcquire(ctx, "s", 2)
	if err != nil {
		t.Fatalf("short-retention holder: %v", err)
	}
	if err := brief.Unlock(ctx); err != nil {
		t.Fatalf("short-retention holder's Unlock: %v", err)
	}
	time.Sleep(shortRetention + 300*time.Millisecond) // past the short retention, before the long holder renews
	if l, err := c.TryAcquire(ctx, "s", 3); !errors.Is(err, redlock.ErrInvalid) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("limit 3 while a permit of limit 2 is held = %v, want ErrInvalid", err)
	}
}

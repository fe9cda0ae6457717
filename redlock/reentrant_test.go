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

// An owner's holds of one key with different TTLs: the short hold's
// renewal and release never cut the lease the long hold relies on. Each
// case takes both holds (in either order), renews the short one, releases
// it, and lets its TTL pass: the long hold still holds the key on a
// majority with its own lease, and a third party cannot take it.
func TestOwnerHoldsKeepTheLongestLease(t *testing.T) {
	const long, short = 20 * time.Second, 600 * time.Millisecond
	kinds := []struct {
		name string
		take func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error)
		// intrude tries, as two third parties, to take what the long hold
		// holds; it returns how many got in.
		intrude func(ctx context.Context, c *redlock.Client) int
		// lease is the longest remaining lease of the long hold's key on n.
		lease func(ctx context.Context, n redis.UniversalClient) time.Duration
	}{
		{"writer", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.TryLock(ctx, "k", o...)
		}, func(ctx context.Context, c *redlock.Client) int {
			return intruders(ctx, func() (*redlock.Lock, error) { return c.TryLock(ctx, "k") })
		}, func(ctx context.Context, n redis.UniversalClient) time.Duration {
			return n.PTTL(ctx, redlock.Keys(redlock.DefaultPrefix, "k").Lock).Val()
		}},
		{"LockMany", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.TryLockMany(ctx, []string{"k", "k2"}, o...)
		}, func(ctx context.Context, c *redlock.Client) int {
			return intruders(ctx, func() (*redlock.Lock, error) { return c.TryLock(ctx, "k2") })
		}, func(ctx context.Context, n redis.UniversalClient) time.Duration {
			return min(n.PTTL(ctx, redlock.Keys(redlock.DefaultPrefix, "k").Lock).Val(),
				n.PTTL(ctx, redlock.Keys(redlock.DefaultPrefix, "k2").Lock).Val())
		}},
		{"permit", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.TryAcquire(ctx, "s", 2, o...)
		}, func(ctx context.Context, c *redlock.Client) int {
			// Limit 2, one permit the owner's: one more holder at most.
			return intruders(ctx, func() (*redlock.Lock, error) { return c.TryAcquire(ctx, "s", 2) }) - 1
		}, func(ctx context.Context, n redis.UniversalClient) time.Duration {
			return max(n.PTTL(ctx, redlock.PermitKeys(redlock.DefaultPrefix, "s", 0).Lock).Val(),
				n.PTTL(ctx, redlock.PermitKeys(redlock.DefaultPrefix, "s", 1).Lock).Val())
		}},
		{"reader", func(ctx context.Context, c *redlock.Client, o ...redlock.Option) (*redlock.Lock, error) {
			return c.TryRLock(ctx, "k", o...)
		}, func(ctx context.Context, c *redlock.Client) int {
			return intruders(ctx, func() (*redlock.Lock, error) { return c.TryLock(ctx, "k") })
		}, func(ctx context.Context, n redis.UniversalClient) time.Duration {
			return n.PTTL(ctx, redlock.Keys(redlock.DefaultPrefix, "k").Readers).Val()
		}},
	}
	for _, kind := range kinds {
		for _, longFirst := range []bool{true, false} {
			name := kind.name + "/short first"
			if longFirst {
				name = kind.name + "/long first"
			}
			t.Run(name, func(t *testing.T) {
				c, nodes, _ := lab(t, 3)
				ctx := ctxFor(t, 20*time.Second)
				job := redlock.WithOwner("job")
				ttls := []time.Duration{short, long}
				if longFirst {
					ttls = []time.Duration{long, short}
				}
				holds := map[time.Duration]*redlock.Lock{}
				for _, ttl := range ttls {
					l, err := kind.take(ctx, c, job, redlock.WithTTL(ttl))
					if err != nil {
						t.Fatalf("hold with TTL %v: %v", ttl, err)
					}
					holds[ttl] = l
				}
				defer holds[long].Unlock(ctx)
				if err := holds[short].Extend(ctx); err != nil {
					t.Fatalf("Extend of the short hold: %v", err)
				}
				if err := holds[short].Unlock(ctx); err != nil {
					t.Fatalf("Unlock of the short hold: %v", err)
				}
				kept := testkit.Count(nodes, func(n redis.UniversalClient) bool { return kind.lease(ctx, n) > long/2 })
				if kept < 2 {
					t.Errorf("after the short hold's renewal and release, %d of 3 nodes keep the long hold's lease; want a majority", kept)
				}
				time.Sleep(short + 200*time.Millisecond) // the short hold's lease has run out
				if holds[long].Err() != nil || !time.Now().Before(holds[long].Until()) {
					t.Fatalf("long hold: Err %v, Until in %v; want held", holds[long].Err(), time.Until(holds[long].Until()))
				}
				if n := kind.intrude(ctx, newClient(t, nodes)); n > 0 {
					t.Errorf("%d third parties got in while the owner's %v hold is held", n, long)
				}
			})
		}
	}
}

// intruders makes two attempts with take, keeping what each gets, and
// returns how many succeeded; it releases them before returning.
func intruders(ctx context.Context, take func() (*redlock.Lock, error)) int {
	var got []*redlock.Lock
	for range 2 {
		if l, err := take(); err == nil {
			got = append(got, l)
		}
	}
	for _, l := range got {
		l.Unlock(ctx)
	}
	return len(got)
}

// An owner that reads asks to read again while a writer waits for its
// first read: the nested reader is granted at once — RLock and TryRLock
// alike — instead of waiting behind the writer that waits for it. Once the
// owner's reads end, the writer gets the key.
func TestNestedReaderNotBehindAWaitingWriter(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 20*time.Second)
	job := redlock.WithOwner("job")
	first, err := c.RLock(ctx, "k", job)
	if err != nil {
		t.Fatalf("first RLock: %v", err)
	}
	wc := newClient(t, nodes)
	wrote := make(chan error, 1)
	go func() {
		w, err := wc.Lock(ctx, "k", redlock.WithOwner("writer"))
		if err == nil {
			err = w.Unlock(ctx)
		}
		wrote <- err
	}()
	eventually(t, 5*time.Second, "the writer in line", func() bool { return inLine(t, nodes, "k", "writer") >= 2 })

	nested, err := c.RLock(ctxFor(t, 2*time.Second), "k", job)
	if err != nil {
		t.Fatalf("nested RLock while a writer waits for the owner's first read: %v", err)
	}
	tried, err := c.TryRLock(ctx, "k", job)
	if err != nil {
		t.Fatalf("nested TryRLock while a writer waits for the owner's first read: %v", err)
	}
	if _, err := c.TryRLock(ctx, "k", redlock.WithOwner("other")); !errors.Is(err, redlock.ErrNotObtained) {
		t.Errorf("another owner's TryRLock while a writer waits = %v, want ErrNotObtained", err)
	}
	for _, r := range []*redlock.Lock{tried, nested, first} {
		if err := r.Unlock(ctx); err != nil {
			t.Fatalf("reader Unlock: %v", err)
		}
	}
	if err := <-wrote; err != nil {
		t.Fatalf("writer after the owner's reads: %v", err)
	}
}

// A hold written by an earlier version (its field's value "1", no lease
// end) keeps the lock's expiry as it stands: a nested hold of the same
// owner, taken and released by this version during a rolling upgrade,
// neither frees the key nor cuts its lease.
func TestOwnerHoldOfAnEarlierVersionKeepsItsLease(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	lock := redlock.Keys(redlock.DefaultPrefix, "k").Lock
	for _, n := range nodes {
		if err := n.HSet(ctx, lock, "owner", "job", "h:earlier", 1).Err(); err != nil {
			t.Fatal(err)
		}
		n.PExpire(ctx, lock, 20*time.Second)
	}
	l, err := c.TryLock(ctx, "k", redlock.WithOwner("job"), redlock.WithTTL(time.Second))
	if err != nil {
		t.Fatalf("nested TryLock: %v", err)
	}
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	for i, n := range nodes {
		if left := n.PTTL(ctx, lock).Val(); left < 10*time.Second {
			t.Errorf("node %d: the earlier version's hold left with %v, want its 20 s lease", i, left)
		}
	}
}

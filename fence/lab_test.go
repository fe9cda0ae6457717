package fence_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/fence"
	"github.com/seed818c56a1/quorumlock/internal/hashslot"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Writers race with interleaved tokens: writer g writes g+1, g+1+W, ….
// Whatever the interleaving, the key ends at the largest token, and a reader
// never sees the token go down, nor a value that is not its token's.
func TestConcurrentWritersInterleavedTokens(t *testing.T) {
	s, _ := store(t)
	ctx := ctxFor(t, time.Minute)
	const writers, each = 6, 40
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
		refused  int
		failures []error
	)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				token := int64(g + 1 + i*writers)
				err := s.Set(ctx, "shared", strconv.FormatInt(token, 10), token)
				var se *fence.StaleError
				mu.Lock()
				switch {
				case err == nil:
					accepted++
				case errors.As(err, &se) && se.Seen > token:
					refused++
				default:
					failures = append(failures, err)
				}
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() { readerErr <- readMonotonic(ctx, s, "shared", done) }()
	wg.Wait()
	close(done)
	if err := <-readerErr; err != nil {
		t.Error(err)
	}
	if len(failures) > 0 {
		t.Fatalf("%d writes failed, first: %v", len(failures), failures[0])
	}
	const last = writers * each
	requireStored(t, s, "shared", strconv.Itoa(last), last, false)
	t.Logf("%d writes accepted, %d refused as stale", accepted, refused)
}

// readMonotonic reads key until done is closed, and returns an error if
// its token ever went down or its value was not its token's.
func readMonotonic(ctx context.Context, s *fence.Redis, key string, done <-chan struct{}) error {
	var prev int64
	for {
		select {
		case <-done:
			return nil
		default:
		}
		v, tok, err := s.Get(ctx, key)
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return err
		}
		if tok < prev {
			return errors.New("token went down: " + strconv.FormatInt(prev, 10) + " then " + strconv.FormatInt(tok, 10))
		}
		if v != strconv.FormatInt(tok, 10) {
			return errors.New("value " + v + " visible under token " + strconv.FormatInt(tok, 10))
		}
		prev = tok
	}
}

// A holder whose lock was lost before it wrote (a lease without renewal,
// run out) writes after the next holder: the store refuses it.
func TestWriterWhoseLockWasLost(t *testing.T) {
	lab := redislab.Start(t, 3)
	lab.Trust(t, redlock.TrustStart)
	locks := testkit.Open(t, redlock.New, lab.Clients(t),
		redlock.WithNodeTimeout(testkit.NodeTimeout), redlock.WithTTL(time.Second), redlock.WithAutoRenew(false))
	s, _ := store(t)
	ctx := ctxFor(t, time.Minute)

	slow, err := locks.Lock(ctx, "invoice:7")
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	<-slow.Done() // its lease runs out: the loss is signalled, but it does not stop
	next, err := locks.Lock(ctx, "invoice:7")
	if err != nil {
		t.Fatalf("next Lock: %v", err)
	}
	defer next.Unlock(ctx)
	if next.Token() <= slow.Token() {
		t.Fatalf("next token %d not above the slow holder's %d", next.Token(), slow.Token())
	}
	mustSet(t, s, "invoice:7", "paid by next", next.Token())
	requireStale(t, s.Set(ctx, "invoice:7", "paid twice", slow.Token()), "invoice:7", slow.Token(), next.Token())
	requireStale(t, s.Delete(ctx, "invoice:7", slow.Token()), "invoice:7", slow.Token(), next.Token())
	requireStored(t, s, "invoice:7", "paid by next", next.Token(), false)
	if err := slow.Unlock(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("slow Unlock = %v, want ErrLockLost", err)
	}
}

// clusterKeys are keys whose braces would break a naive hash tag: each
// must still be stored in one slot.
var clusterKeys = []string{"plain", "{tagged}", "a{b}c", "}x", "{", "}", "{}", "x}{y", "user:{42}:cart"}

// Both Redis keys of a store key share one hash slot, so one script may
// touch both on a Redis Cluster (CROSSSLOT otherwise).
func TestKeysShareOneSlot(t *testing.T) {
	for _, key := range clusterKeys {
		value, token := fence.KeyNames(key)
		if a, b := hashslot.Of(value), hashslot.Of(token); a != b {
			t.Errorf("key %q: %q in slot %d, %q in slot %d", key, value, a, token, b)
		}
	}
}

// The store works on a Redis Cluster, through a ClusterClient.
func TestOnCluster(t *testing.T) {
	c := redislab.StartCluster(t, 1).ClusterClients(t)[0]
	s := fence.NewRedis(c)
	ctx := ctxFor(t, 30*time.Second)
	for i, key := range clusterKeys {
		token := int64(i + 10)
		mustSet(t, s, key, "v", token)
		requireStale(t, s.Set(ctx, key, "late", token-1), key, token-1, token)
		requireStored(t, s, key, "v", token, false)
		if err := s.Delete(ctx, key, token+1); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
		requireStored(t, s, key, "", token+1, true)
	}
}

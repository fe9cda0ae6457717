package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// masters starts five local redis-server masters, new and so vouched for
// (TrustStart: no lease can have been lost by their start), and returns a
// client of each; stop closes the clients and the servers. The examples
// run on real masters as deployments do; where no redis-server is
// installed the test binary skips them (redislab.SkipExamplesWithoutServer).
func masters() ([]redis.UniversalClient, func()) {
	return redislab.LaunchClients(5, redlock.TrustStart)
}

// exampleClient is a Client over new masters (see masters), with a node
// timeout that a loaded machine meets and opts after it; stop closes both.
func exampleClient(opts ...redlock.Option) (*redlock.Client, func()) {
	nodes, stopNodes := masters()
	locks, err := redlock.New(nodes, append([]redlock.Option{redlock.WithNodeTimeout(250 * time.Millisecond)}, opts...)...)
	if err != nil {
		panic(err)
	}
	return locks, func() { locks.Close(); stopNodes() }
}

// A fencedStore accepts a write only with a token at least as large as every
// token it has seen: the writes of a holder whose lock has passed to another
// are rejected, however late they arrive.
type fencedStore struct {
	mu      sync.Mutex
	highest int64
	value   string
}

func (s *fencedStore) Write(token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return errors.New("stale token: smaller than one already accepted")
	}
	s.highest, s.value = token, value
	return nil
}

// A holder stalls past its lease; the next holder writes; the stalled one's
// late write is rejected by its fencing token.
func Example_fencedStore() {
	locks, stop := exampleClient(redlock.WithAutoRenew(false), redlock.WithTTL(time.Second))
	defer stop()
	ctx := context.Background()
	store := &fencedStore{}

	slow, _ := locks.Lock(ctx, "invoice:7")
	fmt.Println("slow holder's token:", slow.Token() > 0)
	// The slow holder stalls: Do waits until its lease ends everywhere.
	err := locks.Do(ctx, "invoice:7", func(ctx context.Context) error {
		l, _ := redlock.FromContext(ctx)
		fmt.Println("next holder's token is larger:", l.Token() > slow.Token())
		return store.Write(l.Token(), "paid by the next holder")
	})
	fmt.Println("next holder's write:", err)

	fmt.Println("slow holder's late write:", store.Write(slow.Token(), "paid twice"))
	fmt.Println("store holds:", store.value)
	fmt.Println("slow holder's unlock reports the loss:", errors.Is(slow.Unlock(ctx), redlock.ErrLockLost))
	// Output:
	// slow holder's token: true
	// next holder's token is larger: true
	// next holder's write: <nil>
	// slow holder's late write: stale token: smaller than one already accepted
	// store holds: paid by the next holder
	// slow holder's unlock reports the loss: true
}

// New refuses the same master twice: the quorum counts independent failures.
func ExampleNew_sameMasterTwice() {
	a := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", DB: 1})
	defer a.Close()
	defer b.Close()
	_, err := redlock.New([]redis.UniversalClient{a, b})
	fmt.Println(errors.Is(err, redlock.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// redlock: invalid argument: nodes 0 and 1 are the same master (127.0.0.1:6379): the quorum needs independent masters
}

// TryLock makes one attempt; a refusal says how each node voted.
func ExampleClient_TryLock() {
	locks, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	first, err := locks.TryLock(ctx, "report")
	fmt.Println("first:", err, first.Token() > 0)
	_, err = locks.TryLock(ctx, "report")
	var qe *redlock.QuorumError
	// The first TryLock returned once a majority granted; a node still busy
	// with it may grant the second, never a majority.
	fmt.Println("second:", errors.Is(err, redlock.ErrNotObtained), errors.As(err, &qe) && qe.Granted < qe.Need)
	fmt.Println("unlock:", first.Unlock(ctx))
	// Output:
	// first: <nil> true
	// second: true true
	// unlock: <nil>
}

// refusals is an Observer of one event: it embeds NopObserver for the
// others, and prints how the nodes voted on an acquisition that failed.
type refusals struct{ redlock.NopObserver }

func (refusals) AcquireDone(_ context.Context, key string, _ *redlock.Lock, _ time.Duration, err error) {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return
	}
	refused := 0
	for _, v := range qe.Votes {
		if v.Outcome == redlock.Refused {
			refused++
		}
	}
	fmt.Printf("%s not obtained; refused by a majority: %t\n", key, refused >= qe.Need)
}

// An Observer that embeds NopObserver implements only the events it needs.
// Given to one call, it is told of that acquisition's events only (and of
// its Lock's, had it been obtained).
func ExampleNopObserver() {
	locks, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	first, err := locks.TryLock(ctx, "report", redlock.WithObserver(refusals{}))
	if err != nil {
		panic(err)
	}
	locks.TryLock(ctx, "report", redlock.WithObserver(refusals{}))
	locks.TryLock(ctx, "report") // not observed
	first.Unlock(ctx)
	// Output:
	// report not obtained; refused by a majority: true
}

// Two permits of "thumbnails": two holders at once, the third is refused
// until one of them leaves, and then gets the permit that was freed.
func ExampleClient_TryAcquire() {
	locks, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	a, errA := locks.TryAcquire(ctx, "thumbnails", 2)
	b, errB := locks.TryAcquire(ctx, "thumbnails", 2)
	fmt.Println("two holders:", errA, errB, a.Permit() != b.Permit())
	_, err := locks.TryAcquire(ctx, "thumbnails", 2)
	fmt.Println("third:", errors.Is(err, redlock.ErrNotObtained))
	_, err = locks.TryAcquire(ctx, "thumbnails", 3)
	fmt.Println("another limit:", errors.Is(err, redlock.ErrInvalid))
	freed := a.Permit()
	fmt.Println("unlock:", a.Unlock(ctx))
	c, err := locks.TryAcquire(ctx, "thumbnails", 2)
	fmt.Println("third again:", err, c.Permit() == freed, c.Token() > a.Token())
	c.Unlock(ctx)
	b.Unlock(ctx)
	// Output:
	// two holders: <nil> <nil> true
	// third: true
	// another limit: true
	// unlock: <nil>
	// third again: <nil> true true
}

// Readers share a key, a writer excludes them, and a reader carries the
// token of the writer before it.
func Example_readersAndWriters() {
	locks, stop := exampleClient(redlock.WithAutoRenew(false))
	defer stop()
	ctx := context.Background()

	a, errA := locks.RLock(ctx, "prices")
	b, errB := locks.RLock(ctx, "prices")
	fmt.Println("two readers at once:", errA == nil && errB == nil)
	_, err := locks.TryLock(ctx, "prices")
	fmt.Println("a writer while they read:", errors.Is(err, redlock.ErrNotObtained))
	a.Unlock(ctx)
	b.Unlock(ctx)

	w, err := locks.Lock(ctx, "prices")
	if err != nil {
		panic(err)
	}
	_, err = locks.TryRLock(ctx, "prices")
	fmt.Println("a reader while it writes:", errors.Is(err, redlock.ErrNotObtained))
	w.Unlock(ctx)

	r, err := locks.RLock(ctx, "prices")
	if err != nil {
		panic(err)
	}
	fmt.Println("the reader's token is at least the writer's:", r.Token() >= w.Token())
	r.Unlock(ctx)
	// Output:
	// two readers at once: true
	// a writer while they read: true
	// a reader while it writes: true
	// the reader's token is at least the writer's: true
}

// Run is Do's part after the acquisition, for a hold of any kind: here a
// reader's. fn's ctx carries the hold, and the hold is released after fn;
// an Unlock after that — a deferred one, by habit — returns nil.
func ExampleLock_Run() {
	locks, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	r, err := locks.RLock(ctx, "prices")
	if err != nil {
		panic(err)
	}
	defer r.Unlock(ctx) // harmless: Run releases r, and Unlock then returns nil
	err = r.Run(ctx, func(ctx context.Context) error {
		l, _ := redlock.FromContext(ctx)
		_, err := locks.TryLock(ctx, "prices")
		fmt.Println("a writer while we read:", errors.Is(err, redlock.ErrNotObtained), l == r)
		return nil
	})
	fmt.Println("run:", err, "then:", r.Err(), "| Unlock:", r.Unlock(ctx))
	w, err := locks.TryLock(ctx, "prices")
	fmt.Println("a writer after:", err)
	w.Unlock(ctx)
	// Output:
	// a writer while we read: true true
	// run: <nil> then: redlock: lock not held | Unlock: <nil>
	// a writer after: <nil>
}

package fence_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/fence"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Two workers, one lock, one store. Worker 1 is paused past its lease (a
// GC pause, a swapped-out process); worker 2 takes the lock and writes.
// When worker 1 wakes, its write is refused by the store itself.
func Example_pausedWorker() {
	// Three lock masters, and a fourth server: the data, not a master.
	lab, stop, err := redislab.Launch(4)
	if err != nil {
		panic(err)
	}
	defer stop()
	var clients []redis.UniversalClient
	for _, addr := range lab.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		clients = append(clients, c)
	}
	ctx := context.Background()
	for _, m := range clients[:3] {
		if err := redlock.TrustStart(ctx, m); err != nil { // brand-new masters
			panic(err)
		}
	}
	locks, err := redlock.New(clients[:3], redlock.WithTTL(time.Second), redlock.WithAutoRenew(false),
		redlock.WithNodeTimeout(250*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	store := fence.NewRedis(clients[3])

	worker1, err := locks.Lock(ctx, "invoice:7")
	if err != nil {
		panic(err)
	}
	time.Sleep(time.Until(worker1.Until())) // paused: its lease runs out meanwhile

	worker2, err := locks.Lock(ctx, "invoice:7") // waits until the lease is over
	if err != nil {
		panic(err)
	}
	fmt.Println("worker 2 writes:", store.Set(ctx, "invoice:7", "paid by worker 2", worker2.Token()))
	worker2.Unlock(ctx)

	err = store.Set(ctx, "invoice:7", "paid by worker 1", worker1.Token()) // wakes and writes
	fmt.Println("worker 1's late write refused:", errors.Is(err, fence.ErrStale))
	var stale *fence.StaleError
	if errors.As(err, &stale) {
		fmt.Println("the token it lost to is worker 2's:", stale.Seen == worker2.Token())
	}
	value, _, _ := store.Get(ctx, "invoice:7")
	fmt.Println("store holds:", value)
	fmt.Println("worker 1's Unlock reports the loss:", errors.Is(worker1.Unlock(ctx), redlock.ErrLockLost))
	// Output:
	// worker 2 writes: <nil>
	// worker 1's late write refused: true
	// the token it lost to is worker 2's: true
	// store holds: paid by worker 2
	// worker 1's Unlock reports the loss: true
}

// A holder writes several times under one lock (equal tokens are
// accepted); a Delete leaves the token behind, so an older holder cannot
// bring the value back.
func ExampleRedis_Delete() {
	lab, stop, err := redislab.Launch(1)
	if err != nil {
		panic(err)
	}
	defer stop()
	c := redis.NewClient(&redis.Options{Addr: lab.Addrs()[0]})
	defer c.Close()
	store := fence.NewRedis(c)
	ctx := context.Background()

	fmt.Println(store.Set(ctx, "session:9", "draft", 41))
	fmt.Println(store.Set(ctx, "session:9", "final", 41))
	fmt.Println(store.Delete(ctx, "session:9", 42))
	_, token, err := store.Get(ctx, "session:9")
	fmt.Println(token, err == redis.Nil)
	fmt.Println(store.Set(ctx, "session:9", "resurrected", 41))
	// Output:
	// <nil>
	// <nil>
	// <nil>
	// 42 true
	// fence: stale token 41 for key "session:9": token 42 already accepted
}

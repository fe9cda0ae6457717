package redlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// Two schedulers campaign for one name while an observer follows its
// leaders: the first leads, the second waits in line and takes over, with
// a larger term, as soon as the first resigns.
func Example_leaderElection() {
	locks, stop := exampleClient()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leaders, _ := locks.Observe(ctx, "scheduler")

	a, _ := locks.Campaign(ctx, "scheduler", "host-a")
	fmt.Println("observed:", (<-leaders).Value)
	ld, _ := locks.Leader(ctx, "scheduler")
	fmt.Println("leader:", ld.Value, "at its term:", ld.Term == a.Token())

	next := make(chan *redlock.Lock)
	go func() {
		b, _ := locks.Campaign(ctx, "scheduler", "host-b") // waits in line
		next <- b
	}()
	a.Unlock(ctx) // resigns: host-b leads at once
	b := <-next
	fmt.Println("observed:", (<-leaders).Value, "with a larger term:", b.Token() > a.Token())

	b.Unlock(ctx)
	_, err := locks.Leader(ctx, "scheduler")
	fmt.Println("after the last resign:", errors.Is(err, redlock.ErrNoLeader))
	// Output:
	// observed: host-a
	// leader: host-a at its term: true
	// observed: host-b with a larger term: true
	// after the last resign: true
}

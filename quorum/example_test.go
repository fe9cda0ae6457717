package quorum_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"github.com/seed818c56a1/quorumlock/quorum"
)

func ExampleMajority() {
	for n := 1; n <= 5; n++ {
		fmt.Printf("%d nodes need %d\n", n, quorum.Majority(n))
	}
	// Output:
	// 1 nodes need 1
	// 2 nodes need 2
	// 3 nodes need 2
	// 4 nodes need 3
	// 5 nodes need 3
}

// Node 2 hangs. Nodes 0 and 1 decide the round without it, and when node 2's
// grant finally arrives, Late receives it so that the caller can undo it.
func ExampleRound_Run() {
	hung := make(chan struct{})
	late := make(chan string, 1)
	r := quorum.Round[string]{
		Nodes:   3,
		Timeout: 50 * time.Millisecond,
		Clock:   clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		Late: func(node int, v quorum.Vote[string]) {
			late <- fmt.Sprintf("late: node %d %s %s, undo it", node, v.Outcome, v.Value)
		},
	}
	t := r.Run(context.Background(), func(ctx context.Context, node int) quorum.Vote[string] {
		if node == 2 {
			<-hung
		}
		return quorum.Vote[string]{Outcome: quorum.Granted, Value: fmt.Sprintf("lease-%d", node)}
	})
	fmt.Printf("%v; won: %t\n", &t, t.Won())

	close(hung)
	fmt.Println(<-late)
	// Output:
	// 2 of 3 granted, 1 pending, need 2; won: true
	// late: node 2 granted lease-2, undo it
}

// Every node is down. Once the fake clock passes the node timeout, Run
// returns with each vote Failed with ErrTimeout.
func ExampleRound_Run_timeout() {
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	down := make(chan struct{})
	late := make(chan int, 3)
	r := quorum.Round[string]{
		Nodes:   3,
		Timeout: 50 * time.Millisecond,
		Clock:   fc,
		Late:    func(node int, _ quorum.Vote[string]) { late <- node },
	}
	done := make(chan quorum.Tally[string])
	go func() {
		done <- r.Run(context.Background(), func(context.Context, int) quorum.Vote[string] {
			<-down // ignores its ctx, as a stuck connection would
			return quorum.Vote[string]{Outcome: quorum.Refused}
		})
	}()

	if err := fc.WaitForSleepers(context.Background(), 1); err != nil {
		fmt.Println(err)
	}
	fc.Advance(50 * time.Millisecond)
	t := <-done
	fmt.Println(&t)
	fmt.Println(errors.Is(t.Votes[0].Err, quorum.ErrTimeout), errors.Is(t.Votes[0].Err, context.DeadlineExceeded))

	close(down)
	for range 3 {
		<-late
	}
	// Output:
	// 0 of 3 granted, 3 failed, need 2
	// true true
}

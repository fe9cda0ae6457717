package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// A service checks its masters at start-up and refuses to run on masters
// that cannot keep the lock's guarantees.
func ExampleCheck() {
	nodes, stop := masters()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := redlock.Check(ctx, nodes, redlock.WithNodeTimeout(time.Second), redlock.WithClockSample(500*time.Millisecond))
	if err != nil {
		panic(err)
	}
	for _, f := range rep.Findings {
		if f.Severity == redlock.SeverityFail {
			fmt.Printf("node %d (%s) %s: %s; want %s: %s\n", f.Node, f.Addr, f.Check, f.Got, f.Want, f.Why)
		}
	}
	fmt.Printf("%d of %d masters answered; fit to hold locks: %v\n", rep.Reachable, rep.Nodes, rep.Worst() != redlock.SeverityFail)
	// Output: 5 of 5 masters answered; fit to hold locks: true
}

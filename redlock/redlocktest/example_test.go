package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
	"github.com/seed818c56a1/quorumlock/redlock/redlocktest"
)

// Payouts is a user's code: it pays each invoice once, under a lock.
type Payouts struct {
	Locks *redlock.Client

	mu   sync.Mutex
	paid map[string]int // payments per invoice
}

// Pay pays invoice unless it is paid already.
func (p *Payouts) Pay(ctx context.Context, invoice string) error {
	return p.Locks.Do(ctx, "invoice:"+invoice, func(ctx context.Context) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.paid == nil {
			p.paid = map[string]int{}
		}
		if p.paid[invoice] == 0 {
			p.paid[invoice]++
		}
		return nil
	})
}

// A user's code under faults: it goes on with a minority of masters killed
// or frozen, and gives up, with ErrNotObtained, once a majority is gone.
// In a test, Start(t, 5) and Client(t) stop and close everything with the
// test; outside one, New and Close do it.
func Example() {
	masters, err := redlocktest.New(5)
	if err != nil {
		panic(err)
	}
	defer masters.Close()
	locks, err := redlock.New(masters.Clients(), redlock.WithNodeTimeout(redlocktest.NodeTimeout))
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	payouts := &Payouts{Locks: locks}
	ctx := context.Background()

	masters.Kill(0)
	masters.Freeze(1)
	fmt.Println("one master killed, one frozen:", payouts.Pay(ctx, "7"))
	masters.Thaw(1)

	masters.Kill(1)
	masters.Kill(2)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err = payouts.Pay(short, "8")
	fmt.Println("a majority gone, not obtained:", errors.Is(err, redlock.ErrNotObtained))
	// Output:
	// one master killed, one frozen: <nil>
	// a majority gone, not obtained: true
}

// A master restarted empty sits out the restart guard (by default the
// longest TTL in use on the key), as a real one does. Here the holder's
// process ends without Unlock, so its leases run on, and then a majority of
// the masters restart empty: a client meeting them is still not granted
// the lock until the leases and the guard have passed.
func ExampleCluster_Restart() {
	masters, err := redlocktest.New(5)
	if err != nil {
		panic(err)
	}
	defer masters.Close()
	opts := []redlock.Option{redlock.WithNodeTimeout(redlocktest.NodeTimeout), redlock.WithTTL(time.Second), redlock.WithAutoRenew(false)}
	holder, _ := redlock.New(masters.Clients(), opts...)
	ctx := context.Background()

	held, err := holder.TryLock(ctx, "report")
	fmt.Println("held:", err)
	// Close waits for the holder's calls still in flight, so none of them
	// reaches a restarted master.
	holder.Close()
	for i := range 3 {
		masters.Restart(i)
	}
	other, _ := redlock.New(masters.Clients(), opts...)
	defer other.Close()
	_, err = other.TryLock(ctx, "report")
	fmt.Println("restarted masters not counted:", errors.Is(err, redlock.ErrNodeRestarted))

	time.Sleep(time.Until(held.Until()) + time.Second) // the lease and the guard pass
	l, err := other.TryLock(ctx, "report")
	fmt.Println("after the guard:", err, l.Token() > held.Token())
	// Output:
	// held: <nil>
	// restarted masters not counted: true
	// after the guard: <nil> true
}

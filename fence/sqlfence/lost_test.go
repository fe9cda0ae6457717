package sqlfence_test

import (
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A holder whose lock was lost before it wrote (a lease without renewal,
// run out) writes after the next holder: its transaction is refused and
// writes nothing; the next holder's row and value stay.
func TestWriterWhoseLockWasLost(t *testing.T) {
	db := open(t)
	table := newTable(t, db)
	f := newFence(t, table)
	lab := redislab.Start(t, 3)
	lab.Trust(t, redlock.TrustStart)
	locks := testkit.Open(t, redlock.New, lab.Clients(t),
		redlock.WithNodeTimeout(testkit.NodeTimeout), redlock.WithTTL(time.Second), redlock.WithAutoRenew(false))
	ctx := testkit.Context(t, time.Minute)

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
	if err := raise(ctx, db, f, table, "invoice:7", "paid by next", next.Token()); err != nil {
		t.Fatalf("next holder's write: %v", err)
	}
	requireStale(t, raise(ctx, db, f, table, "invoice:7", "paid twice", slow.Token()), "invoice:7", slow.Token(), next.Token())
	requireRow(t, db, table, "invoice:7", "paid by next", next.Token())
	if err := slow.Unlock(ctx); !errors.Is(err, redlock.ErrLockLost) {
		t.Errorf("slow Unlock = %v, want ErrLockLost", err)
	}
}

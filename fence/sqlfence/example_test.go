package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/seed818c56a1/quorumlock/fence/sqlfence"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// pay is one worker's transaction: raise the invoice's fence to the lock's
// token, then write, both committed together — or nothing, if the token is
// stale.
func pay(ctx context.Context, db *sql.DB, f *sqlfence.Fence, l *redlock.Lock, who string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f.Raise(ctx, tx, l.Key(), l.Token()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE invoices SET paid_by = $1 WHERE id = 7", who); err != nil {
		return err
	}
	return tx.Commit()
}

// Two workers, one lock, one PostgreSQL database. Worker 1 is paused past
// its lease; worker 2 takes the lock and pays the invoice. When worker 1
// wakes, its transaction is refused by the fence row, and it pays nothing.
func Example_pausedWorker() {
	nodes, stop := redislab.LaunchClients(3, redlock.TrustStart) // the lock's masters
	defer stop()
	locks, err := redlock.New(nodes, redlock.WithTTL(time.Second), redlock.WithAutoRenew(false),
		redlock.WithNodeTimeout(250*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer locks.Close()
	db, err := sql.Open("pgx", pg.DSN) // the server TestMain started
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, stmt := range []string{
		"CREATE TABLE fences (name TEXT PRIMARY KEY, token BIGINT NOT NULL)",
		"CREATE TABLE invoices (id INT PRIMARY KEY, paid_by TEXT)",
		"INSERT INTO invoices VALUES (7, NULL)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			panic(err)
		}
	}
	f, err := sqlfence.New(sqlfence.Postgres, "fences", "name", "token")
	if err != nil {
		panic(err)
	}

	worker1, err := locks.Lock(ctx, "invoice:7")
	if err != nil {
		panic(err)
	}
	time.Sleep(time.Until(worker1.Until())) // paused: its lease runs out meanwhile

	worker2, err := locks.Lock(ctx, "invoice:7") // waits until the lease is over
	if err != nil {
		panic(err)
	}
	fmt.Println("worker 2 pays:", pay(ctx, db, f, worker2, "worker 2"))
	worker2.Unlock(ctx)

	err = pay(ctx, db, f, worker1, "worker 1") // wakes and pays
	fmt.Println("worker 1's late payment refused:", errors.Is(err, sqlfence.ErrStale))
	var paidBy string
	if err := db.QueryRowContext(ctx, "SELECT paid_by FROM invoices WHERE id = 7").Scan(&paidBy); err != nil {
		panic(err)
	}
	fmt.Println("invoice paid by:", paidBy)
	// Output:
	// worker 2 pays: <nil>
	// worker 1's late payment refused: true
	// invoice paid by: worker 2
}

package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/fence/sqlfence"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// Writers race with interleaved tokens, each Raise followed by a write of
// its token as the value in the same transaction: the row ends at the
// largest token and its value, and a reader never sees the token go down
// nor a value that is not its token's.
func TestConcurrentRaiseInterleavedTokens(t *testing.T) {
	db := open(t)
	table := newTable(t, db)
	f := newFence(t, table)
	ctx := testkit.Context(t, 2*time.Minute)
	const writers, each = 6, 25
	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		accepted, refused int
		failures          []error
	)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				token := int64(g + 1 + i*writers)
				err := raise(ctx, db, f, table, "shared", strconv.FormatInt(token, 10), token)
				var se *sqlfence.StaleError
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
	go func() { readerErr <- readMonotonic(ctx, db, table, done) }()
	wg.Wait()
	close(done)
	if err := <-readerErr; err != nil {
		t.Error(err)
	}
	if len(failures) > 0 {
		t.Fatalf("%d transactions failed, first: %v", len(failures), failures[0])
	}
	const last = writers * each
	requireRow(t, db, table, "shared", strconv.Itoa(last), last)
	t.Logf("%d raises accepted, %d refused as stale", accepted, refused)
}

// readMonotonic reads the row "shared" until done is closed, and returns an
// error if its token went down or its value was not its token's.
func readMonotonic(ctx context.Context, db *sql.DB, table string, done <-chan struct{}) error {
	var prev int64
	for {
		select {
		case <-done:
			return nil
		default:
		}
		var (
			tok int64
			v   sql.NullString
		)
		err := db.QueryRowContext(ctx, "SELECT token, value FROM "+table+" WHERE name = 'shared'").Scan(&tok, &v)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		if tok < prev || v.String != strconv.FormatInt(tok, 10) {
			return fmt.Errorf("read token %d, value %q after token %d", tok, v.String, prev)
		}
		prev = tok
	}
}

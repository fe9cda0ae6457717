package sqlfence_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/fence/sqlfence"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// raise runs one transaction: Raise, then, if accepted, the caller's write
// of value beside the token; it commits, or rolls back on a refusal.
func raise(ctx context.Context, db *sql.DB, f *sqlfence.Fence, table, key, value string, token int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f.Raise(ctx, tx, key, token); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET value = $2 WHERE name = $1", key, value); err != nil {
		return err
	}
	return tx.Commit()
}

// row returns key's token and value ("" for NULL); ok is false without a row.
func row(t *testing.T, db *sql.DB, table, key string) (token int64, value string, ok bool) {
	t.Helper()
	var v sql.NullString
	err := db.QueryRowContext(context.Background(), "SELECT token, value FROM "+table+" WHERE name = $1", key).Scan(&token, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", false
	}
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return token, v.String, true
}

func requireRow(t *testing.T, db *sql.DB, table, key, value string, token int64) {
	t.Helper()
	if tok, v, ok := row(t, db, table, key); !ok || tok != token || v != value {
		t.Fatalf("row %q = %d, %q (present %v); want %d, %q", key, tok, v, ok, token, value)
	}
}

func requireStale(t *testing.T, err error, key string, token, seen int64) {
	t.Helper()
	var se *sqlfence.StaleError
	if !errors.Is(err, sqlfence.ErrStale) || !errors.As(err, &se) || se.Key != key || se.Token != token || se.Seen != seen {
		t.Fatalf("err = %v, want a *StaleError for %q, token %d, seen %d", err, key, token, seen)
	}
}

func newFence(t *testing.T, table string) *sqlfence.Fence {
	t.Helper()
	f, err := sqlfence.New(sqlfence.Postgres, table, "name", "token")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

func TestRaiseAcceptsLargerOrEqualRefusesSmaller(t *testing.T) {
	db := open(t)
	table := newTable(t, db)
	f := newFence(t, table)
	ctx := testkit.Context(t, 30*time.Second)
	steps := []struct {
		value       string
		token, seen int64 // seen: the StaleError's, 0 when accepted
	}{
		{"first (row inserted)", 5, 0}, {"larger", 7, 0}, {"equal", 7, 0}, {"smaller", 6, 7}, {"zero", 0, 7}, {"larger again", 8, 0},
	}
	want := ""
	for _, st := range steps {
		err := raise(ctx, db, f, table, "k", st.value, st.token)
		if st.seen == 0 {
			if err != nil {
				t.Fatalf("Raise %d: %v", st.token, err)
			}
			want = st.value
		} else {
			requireStale(t, err, "k", st.token, st.seen)
		}
		requireRow(t, db, table, "k", want, max(st.token, st.seen))
	}
	if msg := raise(ctx, db, f, table, "k", "", 1).Error(); !strings.HasPrefix(msg, "sqlfence: stale token 1 for key \"k\"") {
		t.Errorf("error %q does not say what happened", msg)
	}
}

// The token is raised in the caller's transaction: rolled back, it is as
// if it had never been raised, and the refusal of a stale Raise happens
// whatever the caller does next.
func TestRaiseRollsBackWithTransaction(t *testing.T) {
	db := open(t)
	table := newTable(t, db)
	f := newFence(t, table)
	ctx := testkit.Context(t, 30*time.Second)
	if err := raise(ctx, db, f, table, "k", "committed", 10); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Raise(ctx, tx, "k", 20); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	requireRow(t, db, table, "k", "committed", 10)
	if err := raise(ctx, db, f, table, "k", "after the rollback", 15); err != nil {
		t.Fatalf("Raise 15 after a rolled-back 20: %v", err)
	}
	requireRow(t, db, table, "k", "after the rollback", 15)
}

// Tokens compare exactly as BIGINTs over the whole int64 range.
func TestRaiseInt64Edges(t *testing.T) {
	db := open(t)
	table := newTable(t, db)
	f := newFence(t, table)
	ctx := testkit.Context(t, 30*time.Second)
	for i, tc := range []struct{ accepted, late int64 }{
		{1<<53 + 1, 1 << 53}, {math.MaxInt64, math.MaxInt64 - 1}, {1000, 999},
	} {
		key := "edge" + strconv.Itoa(i)
		for _, tok := range []int64{tc.late, tc.accepted, tc.accepted} {
			if err := raise(ctx, db, f, table, key, strconv.FormatInt(tok, 10), tok); err != nil {
				t.Fatalf("Raise %d: %v", tok, err)
			}
		}
		requireStale(t, raise(ctx, db, f, table, key, "late", tc.late), key, tc.late, tc.accepted)
		requireRow(t, db, table, key, strconv.FormatInt(tc.accepted, 10), tc.accepted)
	}
}

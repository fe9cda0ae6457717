package sqlfence_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/fence/sqlfence"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// Names that are not plain identifiers are refused by New, before any
// statement exists.
func TestNewRefusesBadNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name              string
		d                 sqlfence.Dialect
		table, key, token string
		want              string
	}{
		{"injection in table", sqlfence.Postgres, "fences; DROP TABLE fences", "name", "token", "not a plain identifier"},
		{"empty table", sqlfence.Postgres, "", "name", "token", "not a plain identifier"},
		{"three parts", sqlfence.Postgres, "a.b.c", "name", "token", "at most schema.table"},
		{"empty schema", sqlfence.Postgres, ".fences", "name", "token", "not a plain identifier"},
		{"leading digit", sqlfence.Postgres, "1fences", "name", "token", "not a plain identifier"},
		{"quoted", sqlfence.Postgres, `"fences"`, "name", "token", "not a plain identifier"},
		{"too long", sqlfence.Postgres, long, "name", "token", "at most 63"},
		{"space in key column", sqlfence.MySQL, "fences", "na me", "token", `"na me"`},
		{"comment in token column", sqlfence.SQLite, "fences", "name", "token--", `"token--"`},
		{"backtick", sqlfence.MySQL, "fences", "name`", "token", "not a plain identifier"},
		{"empty token column", sqlfence.Postgres, "fences", "name", "", "not a plain identifier"},
		{"no dialect", 0, "fences", "name", "token", "unknown dialect 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := sqlfence.New(tc.d, tc.table, tc.key, tc.token)
			if f != nil || !errors.Is(err, sqlfence.ErrInvalid) || !strings.HasPrefix(err.Error(), "sqlfence: invalid argument: ") ||
				!strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("New = %v, %v; want one line matching ErrInvalid saying %q", f, err, tc.want)
			}
		})
	}
	for _, ok := range [][3]string{{"fences", "name", "token"}, {"public.fences", "key", "tok_2"}, {"_t", "K", "T"}} {
		if _, err := sqlfence.New(sqlfence.Postgres, ok[0], ok[1], ok[2]); err != nil {
			t.Errorf("New(%q, %q, %q): %v", ok[0], ok[1], ok[2], err)
		}
	}
}

// Bad input to Raise is refused before anything is sent: the table stays
// empty, and the transaction usable.
func TestRaiseRefusesBadInput(t *testing.T) {
	db := open(t)
	table := newTable(t, db)
	f := newFence(t, table)
	ctx := testkit.Context(t, 30*time.Second)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	nilCtx := context.Context(nil)
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"empty key", "empty key", f.Raise(ctx, tx, "", 1)},
		{"negative token", "negative token -1", f.Raise(ctx, tx, "k", -1)},
		{"MinInt64", "negative token", f.Raise(ctx, tx, "k", math.MinInt64)},
		{"nil tx", "nil transaction", f.Raise(ctx, nil, "k", 1)},
		{"nil ctx", "nil context", f.Raise(nilCtx, tx, "k", 1)},
		{"nil Fence", "no Fence", (*sqlfence.Fence)(nil).Raise(ctx, tx, "k", 1)},
		{"zero Fence", "no Fence", new(sqlfence.Fence).Raise(ctx, tx, "k", 1)},
	} {
		if !errors.Is(tc.err, sqlfence.ErrInvalid) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", tc.name, tc.err, tc.want)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the transaction is no longer usable: %v", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows (%v) after refused calls, want 0", n, err)
	}
}

// A Fence on a table that does not exist fails at Raise with the
// database's error, not as stale.
func TestRaiseMissingTable(t *testing.T) {
	db := open(t)
	f, err := sqlfence.New(sqlfence.Postgres, "no_such_table", "name", "token")
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t, 30*time.Second)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = f.Raise(ctx, tx, "k", 1)
	if err == nil || errors.Is(err, sqlfence.ErrStale) || !strings.Contains(err.Error(), "no_such_table") {
		t.Fatalf("Raise on a missing table = %v, want the database's error", err)
	}
}

package sqlfence_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// pg is the package's PostgreSQL server, started by TestMain; pgErr says
// why there is none.
var (
	pg    *pgServer
	pgErr error
)

// TestMain starts one PostgreSQL server for every test and example, stops
// it after them, then fails the run if a goroutine is left. Without a
// server installed the tests and examples are skipped, unless CI=true: then
// they fail.
func TestMain(m *testing.M) {
	flag.Parse()
	pg, pgErr = startPostgres()
	if pgErr != nil {
		fmt.Fprintln(os.Stderr, "sqlfence: no PostgreSQL server:", pgErr)
		if os.Getenv("CI") != "true" {
			_ = flag.Set("test.skip", "^Example")
		}
	}
	redislab.SkipExamplesWithoutServer()
	code := m.Run()
	if pg != nil {
		pg.stop()
	}
	if code == 0 {
		if err := goleak.Find(testkit.LeakIgnores()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// open returns a connection pool to the package's server, closed when t
// ends; it skips t without a server (fails it when CI=true).
func open(t testing.TB) *sql.DB {
	t.Helper()
	if pgErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no PostgreSQL server (CI=true, so this is a failure): %v", pgErr)
		}
		t.Skipf("no PostgreSQL server: %v", pgErr)
	}
	db, err := sql.Open("pgx", pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// tables numbers the tables the tests create, one each.
var tables atomic.Int64

// newTable creates a table of fenced rows — name, token, and a value the
// tests write beside the token — and returns its name.
func newTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	name := fmt.Sprintf("fences_%d", tables.Add(1))
	if _, err := db.ExecContext(context.Background(),
		"CREATE TABLE "+name+" (name TEXT PRIMARY KEY, token BIGINT NOT NULL, value TEXT)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return name
}

package sqlfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

var (
	// ErrStale is matched by the error of a Raise whose token is smaller
	// than the row's: nothing was written. errors.As gives the
	// *StaleError with the token seen.
	ErrStale = errors.New("sqlfence: stale token")

	// ErrInvalid is matched by every error that refuses bad input to New
	// or Raise; nothing is sent.
	ErrInvalid = errors.New("sqlfence: invalid argument")
)

// A StaleError is a Raise refused because the row held a larger token. It
// matches ErrStale (errors.Is).
type StaleError struct {
	Key   string // the refused Raise's key
	Token int64  // its token
	Seen  int64  // the row's token, larger than Token
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("sqlfence: stale token %d for key %q: token %d already accepted", e.Token, e.Key, e.Seen)
}

// Unwrap returns ErrStale.
func (e *StaleError) Unwrap() error { return ErrStale }

// A Dialect is the SQL a database speaks: its placeholders and its upsert.
// The package's tests run Postgres on a real server; the SQLite and MySQL
// statements follow those databases' documented upserts but are not yet
// run against a server here.
type Dialect int

const (
	// Postgres: $1 placeholders; INSERT … ON CONFLICT … DO UPDATE … WHERE.
	Postgres Dialect = iota + 1
	// SQLite (3.24 or later): ? placeholders; the same upsert as Postgres.
	SQLite
	// MySQL (and MariaDB): ? placeholders; INSERT … ON DUPLICATE KEY
	// UPDATE keeping the larger token, then a locking read of it.
	MySQL
)

// identifier is what a table or column name may be: a plain SQL
// identifier, written into statements unquoted (a table may be
// schema-qualified, each part such a name).
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// A Fence raises tokens in one table of one database. It holds only the
// statements it built: it is safe for concurrent use.
type Fence struct {
	dialect Dialect
	upsert  string // raises the token, or keeps the larger one (MySQL)
	read    string // the row's token
}

// New returns a Fence on table (optionally "schema.table") whose rows are
// keyed by keyColumn and carry their token in tokenColumn. Names that are
// not plain identifiers, and an unknown dialect, are refused (ErrInvalid).
// New sends nothing; Raise finds out whether the table exists.
func New(d Dialect, table, keyColumn, tokenColumn string) (*Fence, error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return nil, invalid("table name %q: at most schema.table", table)
	}
	for _, name := range append(parts, keyColumn, tokenColumn) {
		if !identifier.MatchString(name) {
			return nil, invalid("name %q is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63 characters)", name)
		}
	}
	t, k, tok := table, keyColumn, tokenColumn
	switch d {
	case Postgres:
		return &Fence{d, onConflict(t, k, tok, "$1", "$2"), fmt.Sprintf("SELECT %s FROM %s WHERE %s = $1", tok, t, k)}, nil
	case SQLite:
		return &Fence{d, onConflict(t, k, tok, "?", "?"), fmt.Sprintf("SELECT %s FROM %s WHERE %s = ?", tok, t, k)}, nil
	case MySQL:
		// Quoted: KEY and other reserved words are common column names.
		t, k, tok = "`"+strings.ReplaceAll(t, ".", "`.`")+"`", "`"+k+"`", "`"+tok+"`"
		return &Fence{d,
			fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES (?, ?) ON DUPLICATE KEY UPDATE %s = GREATEST(%s, VALUES(%s))", t, k, tok, tok, tok, tok),
			fmt.Sprintf("SELECT %s FROM %s WHERE %s = ? FOR UPDATE", tok, t, k)}, nil
	}
	return nil, invalid("unknown dialect %d", int(d))
}

// onConflict is the upsert of Postgres and SQLite: it inserts the row, or
// raises its token if not larger; it affects no row when the row's token is
// larger. On Postgres the conflicting row is locked either way.
func onConflict(table, key, token, p1, p2 string) string {
	return fmt.Sprintf("INSERT INTO %s AS t (%s, %s) VALUES (%s, %s) ON CONFLICT (%s) DO UPDATE SET %s = EXCLUDED.%s WHERE t.%s <= EXCLUDED.%s",
		table, key, token, p1, p2, key, token, token, token, token)
}

// Raise makes key's row carry token, inside tx, if the row's token is not
// larger — inserting the row if there is none — and returns nil: the caller
// then makes its writes in tx and commits. If the row's token is larger it
// changes nothing and returns a *StaleError (errors.Is ErrStale): the
// caller's lock has passed to a holder that has written since, and tx must
// not write. Equal tokens are accepted: one holder may write many times.
//
// The row stays locked by tx until it commits or rolls back, so a
// concurrent Raise of the same key waits for it. A failure of the
// statement is returned wrapped; tx is then usually unusable (Postgres
// aborts it) and should be rolled back. Under REPEATABLE READ or
// SERIALIZABLE isolation a Raise that waited for a concurrent one may fail
// with the database's serialization error: retry the whole transaction,
// which then sees the other's token.
func (f *Fence) Raise(ctx context.Context, tx *sql.Tx, key string, token int64) error {
	switch {
	case ctx == nil:
		return invalid("Raise: nil context")
	case f == nil || f.upsert == "":
		return invalid("Raise: no Fence (use New)")
	case tx == nil:
		return invalid("Raise: nil transaction")
	case key == "":
		return invalid("Raise: empty key")
	case token < 0:
		return invalid("Raise %q: negative token %d", key, token)
	}
	res, err := tx.ExecContext(ctx, f.upsert, key, token)
	if err != nil {
		return fmt.Errorf("sqlfence: Raise %q: %w", key, err)
	}
	if f.dialect != MySQL {
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("sqlfence: Raise %q: rows affected: %w", key, err)
		}
		if n == 1 {
			return nil
		}
	}
	var seen int64
	if err := tx.QueryRowContext(ctx, f.read, key).Scan(&seen); err != nil {
		return fmt.Errorf("sqlfence: Raise %q: reading the token: %w", key, err)
	}
	if seen > token {
		return &StaleError{Key: key, Token: token, Seen: seen}
	}
	if f.dialect == MySQL {
		return nil
	}
	return fmt.Errorf("sqlfence: Raise %q: the upsert changed no row, yet the row's token %d is not larger than %d", key, seen, token)
}

// invalid returns an error matching ErrInvalid that says what was wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

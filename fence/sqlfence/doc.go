// Package sqlfence fences writes to a SQL database: inside the caller's own
// transaction, before its writes, Raise raises a row's token column to the
// lock's fencing token, and refuses (ErrStale) if the row already holds a
// larger one. The check and the caller's writes then commit or roll back
// together, and the row stays locked by the transaction until it ends, so
// no holder with a smaller token can write in between.
//
// The package is a module of its own, on database/sql only: it brings no
// driver and no Redis client into a program's module graph. The caller
// opens the database with the driver of its choice.
//
// # Schema
//
// The table needs a key column that is unique (a primary key or a unique
// index: the upsert's conflict target) and an integer token column wide
// enough for int64 (BIGINT), for instance:
//
//	CREATE TABLE fences (name TEXT PRIMARY KEY, token BIGINT NOT NULL);
//
// Raise inserts the row when it does not exist yet, with the key and token
// only: a table of the caller's data may carry the two columns itself if its
// other columns have defaults; otherwise keep one row per lock key in a
// table of fences, as above, and write the data in the same transaction.
//
// # Using it with redlock
//
//	l, err := locks.Lock(ctx, "invoice:7")
//	// ...
//	tx, err := db.BeginTx(ctx, nil)
//	// ...
//	defer tx.Rollback()
//	if err := f.Raise(ctx, tx, "invoice:7", l.Token()); err != nil {
//		return err // errors.Is(err, sqlfence.ErrStale): the lock passed on; write nothing
//	}
//	// ... the transaction's writes ...
//	return tx.Commit()
//
// # Errors
//
// Errors start with "sqlfence:". A refused Raise returns a *StaleError,
// which matches ErrStale; bad input (a table or column name that is not a
// plain identifier, an empty key, a negative token, a nil ctx or tx)
// returns an error matching ErrInvalid, and nothing is sent. Names are
// checked against a plain identifier pattern and only then written into the
// statement, so no name can carry SQL.
package sqlfence

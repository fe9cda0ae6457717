// Package fence provides stores that check fencing tokens themselves, so
// that the write of a lock holder whose lock has passed to another is
// refused by the data, wherever that holder has been paused.
//
// A lock cannot stop a holder that was paused (GC, swap, SIGSTOP, a slow
// network) past its lease from writing when it wakes: by then another
// holder may have the lock and have written. A fencing token closes that
// gap, provided the store checks it: each holding of a lock has a token
// larger than every earlier holding's (redlock's Lock.Token), the holder
// passes it with each write, and the store refuses a write whose token is
// smaller than one it has already accepted for the key. That check must be
// made by the store, in the same atomic step as the write: a read of the
// token followed by a write leaves a window in which the other holder's
// write lands.
//
// Redis is such a store on a Redis server (or Cluster): one script per
// write checks and writes. For SQL databases, the module
// github.com/seed818c56a1/quorumlock/fence/sqlfence raises a row's token
// column inside the caller's own transaction, so that the check commits or
// rolls back with the caller's writes.
//
// # Using it with redlock
//
//	l, err := locks.Lock(ctx, "invoice:7")
//	if err != nil {
//		return err
//	}
//	defer l.Unlock(ctx)
//	// ... work, however long ...
//	err = store.Set(ctx, "invoice:7", "paid", l.Token())
//	if errors.Is(err, fence.ErrStale) {
//		// The lock passed to another holder, who has written since:
//		// nothing was written; do not retry with this lock.
//	}
//
// Use the lock's token with every write of the data it guards, and the
// token of that key (Lock.TokenOf) for a lock of several keys. Tokens of
// different lock keys are unrelated: fence one store key with one lock
// key's tokens only. A Delete is a write: a holder with a smaller token can
// neither recreate the key nor overwrite a later holder's Set.
//
// # Tokens compare exactly
//
// Tokens are int64s of 0 or more (redlock's are the larger of a counter and
// a node's clock in microseconds). They are stored and compared as decimal
// strings, never as Lua numbers, which are doubles and cannot tell apart
// tokens that differ past 2^53. A write with a token equal to the largest
// accepted one is accepted: a holder may write several times.
//
// # Errors
//
// Errors start with "fence:". A refused write returns a *StaleError, which
// matches ErrStale; bad input returns an error matching ErrInvalid, and
// nothing is sent. A failed call (a timeout, a lost connection) may or may
// not have written: retry it with the same token, which is accepted again
// if it had.
package fence

// Package redlock implements the Redlock algorithm: a lock held by a
// majority of N independent Redis masters, so that it survives the loss of
// any minority of them — a failover that loses a key on one master no longer
// hands the lock to a second holder.
//
// # What a lock is
//
// A Client is made once over the masters' clients (New). A *Lock is one
// holding, granted by a majority of them, until Unlock, until it is lost, or
// until the Client closes:
//
//	c, err := redlock.New([]redis.UniversalClient{n1, n2, n3, n4, n5})
//	...
//	err = c.Do(ctx, "payout:42", func(ctx context.Context) error {
//		return pay(ctx) // ctx is cancelled if the lock is lost
//	})
//
// Every kind of hold is a *Lock: Lock and TryLock take one key, LockMany
// several keys all or none, RLock a reader's shared hold, Acquire one of a
// limited number of permits, Campaign the leadership of a name. Do runs a
// function under a key's lock and Lock.Run under any hold; Leader and
// Observe read who leads a name.
//
// # How a lock is taken
//
// An attempt reads the monotonic clock, then sends one Lua script to every
// master in parallel, each call under its own timeout (WithNodeTimeout),
// enforced by the library whatever the redis client's settings. The script
// sets the key only if it is free or already the caller's, so a re-sent
// attempt is the same grant. The lock is held if a majority granted it and
// its validity has not run out when they are counted:
//
//	validity = ttl − elapsed − (ttl·driftFactor + 2ms)
//
// The round is decided as soon as a majority granted or no longer can: a
// slow or dead minority costs nothing. A failed attempt is undone on every
// master that did not refuse it, the ones that timed out included, and on
// any master whose answer arrives late. Each grant raises the key's fencing
// counter on its master; the lock's Token is the largest among the grants,
// written back to the granting masters behind it unless their grants came
// from their clocks within half the TTL of it — so an uncontended Lock
// takes two round trips, acquire and release (docs/SAFETY.md, "Tokens
// without a write-back round").
//
// Lock waits in line: every master orders waiters by the same ticket (the
// time of the first attempt), so they agree on who is next, and Unlock wakes
// the first waiter at once through pub/sub. TryLock makes one attempt and
// never jumps the line. With auto-renewal on (the default), a watchdog
// extends every held lock through the quorum every TTL/3, batching a
// Client's locks per master, so work may run longer than the TTL; the TTL
// then only bounds how long a crashed holder blocks the others.
//
// # What is promised
//
// While a Lock's Err is nil and the local clock is before its Until, no other
// owner holds the same key (for a reader, no writer does); at most limit
// holders hold a semaphore's permits; one leader leads a name at a time.
// More precisely:
//
//   - A lost lock is told before its validity ends: Done closes and Err
//     returns ErrLockLost a tenth of the TTL (at least one node timeout)
//     before Until, and the ctx of Do and Run is cancelled.
//   - Fencing tokens grow: every later holding of a key has a larger Token,
//     even across masters restarted empty, and a leader's term is its token.
//   - Nothing deletes or extends another owner's lock: release and extension
//     compare owner and hold.
//   - Every wait on a master is bounded: a caller's call returns by the node
//     timeout, and nothing waits longer than the node timeout plus a late
//     window of min(4 × node timeout, 250 ms); Close returns within that.
//   - Bad input is refused with an error matching ErrInvalid before anything
//     is sent; every error is one line starting with "redlock:".
//   - No goroutine of a lock outlives its Unlock, nor any of a Client its
//     Close. Every key a lock writes on a master expires.
//
// These promises rest on Redlock's own assumptions:
//
//   - The masters are independent: no replication between them, and never
//     the same server twice. New refuses a repeated address; two members
//     that reach one Redis Cluster or Sentinel set are found at first
//     contact and refused (ErrSameCluster). Aliases of one plain master
//     (DNS names, NAT) are not caught.
//   - Clocks advance at about the same rate: the drift between the client
//     and any master over one TTL stays within ttl·driftFactor + 2ms; and
//     no master's clock steps back by more than about half the TTL between
//     two grants of a key (tokens come from the masters' clocks).
//   - A master that crashes either keeps its keys (appendfsync always), or
//     comes back as a new process whose grants are not counted until every
//     lease it could have granted has run out: the restart guard, on by
//     default (WithRestartGuard), learnt from the keys' TTL records. Masters
//     that are new, not restarted, may be vouched for (CheckNew, then
//     TrustStart) to count at once.
//   - The masters are masters (a replica's vote is refused: ErrReplica) and
//     evict nothing (maxmemory-policy noeviction).
//
// A member may be a Redis Cluster of several shards or a Sentinel master
// set: one vote either way, its failovers covered by per-slot (or
// per-master) owner records that sit a promoted replica out for one guard.
//
// # Limits
//
// The library cannot stop a holder that ignores Done, or one paused (GC,
// swap, SIGSTOP) past its validity, from writing afterwards: a store that
// rejects writes with a token smaller than one it has seen does. Package
// fence is such a store on Redis, fence/sqlfence one in an SQL row.
//
// With restart detection off (WithRestartGuard(0)), a master restarted empty
// at once can grant a key a majority still holds elsewhere, and tokens may
// go back. A master that has just started is not counted for the longest
// TTL in use on the key; masters that all started together wait
// MaxRestartGuard before the first lock, unless vouched for.
//
// LockMany takes at most MaxKeys keys, and on a Redis Cluster member only
// keys of one hash slot. A key is at most MaxKeyLen bytes. While anyone
// waits, TryLock is refused even on a free lock. Locks are not reentrant
// unless acquired under one owner (WithOwner). A lock whose release too few
// masters confirmed expires with its TTL where the release did not land.
//
// An even number of masters buys nothing over one fewer: 4 tolerate one
// failure, as 3 do; 2 tolerate none.
//
// # Errors
//
// An acquisition without a majority returns an error matching
// ErrNotObtained, whose *QuorumError (errors.As) lists every master's vote.
// A waiting acquisition stops when its ctx ends (the error then matches
// ctx.Err() as well), when WithMaxWait runs out on a ctx without deadline,
// when the Client closes (ErrClosed), and at once when so many masters fail
// for a lasting reason (a replica, a refused command, a wrong password) that
// no majority can ever answer. Extend and Unlock return ErrLockLost when the
// quorum no longer holds the lock, ErrNotHeld after Unlock, and a
// *QuorumError matching neither when too few masters answered to tell.
//
// # Further reading
//
// The argument behind each promise — late grants over dropped connections,
// the restart guard, why tokens only grow, the bounds on every wait, readers,
// semaphores, elections, the key layout — is in docs/SAFETY.md; members that
// are Redis Clusters or Sentinel sets in docs/SHARDS.md; the file map in
// docs/ARCHITECTURE.md.
package redlock

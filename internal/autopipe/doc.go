// Package autopipe batches the commands that many goroutines send to one
// Redis client: natural auto-pipelining, one Pipe per Redis master.
//
// # Batching
//
// While a batch is in flight, new calls collect in a queue; the moment the
// batch's replies are in, the whole queue goes out as the next batch — one
// go-redis pipeline (or, for one command, Process: WithLoneProcess), one
// write and one read. When nothing is in flight, a
// call goes out at once: there is no timer and no linger. After each batch
// the sending goroutine yields the processor once (runtime.Gosched), so
// that callers it has just answered and that call again at once join the
// next batch instead of waiting a whole round trip for the one after; it
// does not wait for anyone, and costs nothing when no one else is ready.
//
// # Timeouts, and what a caller learns
//
// Each call ends at its own ctx: Do returns when its reply arrives or when
// ctx ends, whichever comes first, whatever the client's settings — even
// without ContextTimeoutEnabled, where go-redis reads a written command's
// reply until ReadTimeout (seconds) whatever the ctx says. A call's
// outcome is then one of three:
//
//   - the reply (or the Redis error reply) to its command;
//   - an error matching ErrAbandoned (and ctx.Err()): the caller stopped
//     waiting, the command may have run. Its reply is still read — the connection stays in step
//     — and dropped by Do; DoLate hands it to a callback instead, which is
//     how a caller undoes a write whose reply came too late (a lock granted
//     by a slow master);
//   - an error matching ErrNotSent: nothing reached the server. Either the
//     Pipe is closed (ErrClosed), or ctx had ended before the call's batch
//     formed — a call whose caller has gone is never written. So a
//     follow-up after a timeout (an undo, a release) needs a fresh ctx.
//     Or the server refused to set up the batch's connection (ErrSetup,
//     with the server's answer: WRONGPASS, SELECT's error), which go-redis
//     would leave off the commands, as an empty reply.
//
// A stuck batch (a blackholed master) holds up only its own Pipe, and only
// until every one of its callers has passed its deadline (or, with
// WithOverdueAfter, until it has been in flight that long): the batch is then
// overdue, and gives up its place — the calls queued behind it go out at
// once as the next batch, on another pooled connection, while the overdue
// one is still read to its end (WithMaxOverdue). So when the master comes
// back, the next call is answered at once, instead of after the client's
// ReadTimeout and retries. Other Pipes, over other masters, are untouched.
// A client with ContextTimeoutEnabled also cuts a batch's read at the
// latest deadline of its calls plus the late window (WithLateWindow), and
// drops its connection: the late outcomes are then that error.
//
// A Redis error reply is its command's error only, never its batch-mates';
// a connection error fails every command of its batch. go-redis retries a
// batch on network errors and read timeouts (MaxRetries), as it retries
// rdb.Do, so a command may run twice; set MaxRetries to -1 to rule that out.
//
// # Connections
//
// By default every batch takes its connection from the client's pool,
// whose health check finds a connection the server closed — a restarted
// master — before a batch is written on it. With WithHeldConnections, over
// a plain *redis.Client with MaxRetries -1, each sending goroutine
// holds one connection (redis.Conn) from batch to batch: a batch then takes
// nothing from the pool — no pool look-up, no health check (a peek at the
// socket, a system call), about ten fewer allocations. The sender hands it
// back and takes one from the pool again after a batch that failed on it
// (a connection error, or a set-up the server refused), once it has been
// idle 100 ms (so that the pool's health check finds a connection the
// server closed meanwhile, as after a restart, before a batch is written on
// it), and every 4 s (go-redis peeks at a RESP3 connection for push
// notifications unless it was handed back less than 5 s ago). A client
// that retries keeps taking a connection from the pool per batch, so that
// a retry goes out on a fresh one; a ClusterClient or a Ring splits the
// batch by node on its own pools. A held connection counts against the
// client's PoolSize until its sender idles out (DefaultIdleTimeout): a
// client shared with other work needs a pool of MaxInFlight more. Close
// hands the held connections back.
//
// # In flight at once: one batch per Pipe (DefaultMaxInFlight)
//
// With one batch in flight, a batch is written only once the replies of the
// one before are all read, or once that one is overdue: a command sent after
// another's Do returned never runs before it while that one's batch is
// answered in time — a release does not overtake the acquisition it undoes.
// Once a batch is overdue, or failed on its connection, its commands may run
// after later ones, or not at all; a caller that needs the strict order
// sets WithMaxOverdue(0) and a client that never cuts a read. One batch
// also makes the biggest batches (fewest syscalls and server wake-ups) and
// holds one connection per master.
// WithMaxInFlight(2..4) lets later batches go out on other pooled
// connections while one is slow — a lost packet's retransmission then
// delays one batch, not all that follow — and gives up that order.
//
// Measured with 16 goroutines on one local redis-server with the lab's
// settings (2 cores shared with other test jobs, so numbers move by 20–50%
// between runs; BenchmarkDoParallel, median of 5 runs, µs per call):
//
//	                          plain rdb.Do  in flight 1  in flight 2  in flight 4
//	GET, loopback                     24.4          7.1          6.0          6.9
//	  calls per batch                              14.1          9.0          5.6
//	INCR, loopback (fsync)            83.9         66.9         66.6         97.9
//	INCR, slow link (~2.5 ms)          195          253          241          204
//	allocs per call                   5–12          2–3          2–3          3–5
//
// Where the client's CPU does the waiting (GET on loopback) a Pipe is
// 3.4–4.8× faster than plain Do, with fewer allocations; where the server
// does (every write fsynced: appendfsync always) it is about as fast, over
// one connection instead of 16. Over a slow link (faultproxy, SetLatency
// 0.5 ms each way, ~2.5 ms round trips with its timer granularity), 16
// connections each with its own command beat one batch in flight by 5–30%:
// the callers that miss a batch wait a round trip. More batches in flight
// gain back part of that on some runs, and split the batches, and cost the
// order; none wins by more than the noise everywhere, so the default is one.
//
// A lone caller pays two goroutine hand-offs per call (to the sender and
// back). Sequential GET on loopback (BenchmarkDo, three runs, load average
// 7 on 2 cores): 11.8–16.0 µs and 6 allocations for rdb.Do; 20.2–23.3 µs
// and 9 allocations through a Pipe over a client that retries (a pipeline
// per batch, and go-redis's pool take and health check); 18.3–23.5 µs and
// 6 allocations over one that never retries, whose sender holds its
// connection (see Connections). With 16 callers the held connection keeps
// the batches (14 calls each) at 2 allocations per INCR and 3 per GET.
// Sequential INCR is fsync-bound (0.1–0.4 ms either way). The Pipe itself
// allocates nothing per call beyond the returned *redis.Cmd, and nothing
// per batch: its queues, call records, batch context and timers are
// reused.
//
// A Pipe given WithLoneProcess writes a batch of one command with the
// client's Process instead of a one-command pipeline: a lone PING then makes
// 8 allocations instead of 10 (TestLoneCallAllocatesLess), and a lock cycle
// of the library (ten lone calls) about 20 fewer. A hook it adds to the
// client keeps a refused connection set-up apart from the command's own
// error reply, which Process alone files alike (see WithLoneProcess).
//
// Writing a lone call on its caller's goroutine (no hand-off) would need a
// connection the Pipe reads itself: a caller blocked in a go-redis read
// cannot leave at its deadline, and go-redis drops a connection whose read
// it cut, with the late reply the Pipe promises to deliver.
//
// # Goroutines and clients
//
// A Pipe runs at most MaxInFlight sending goroutines, started by the calls
// that need them and ending after an idle timeout (DefaultIdleTimeout), at
// most MaxOverdue more whose batch went overdue (each ends with its batch),
// and one short-lived goroutine per late callback. Close ends them all. A Pipe
// never closes its client; it takes any go-redis client (ClusterClient and
// Ring split each batch by node themselves). Batches run under their own
// context, not their callers': go-redis hooks see the batch, without the
// callers' context values. That context is the sender's, reused from batch
// to batch (its deadline armed anew, one timer closing its Done channel),
// so that a batch allocates no context and starts no timer of its own; a
// hook must not keep it past the batch.
package autopipe

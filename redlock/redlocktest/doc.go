// Package redlocktest gives users of package redlock in-process masters for
// their own tests: a Cluster of n independent Redis-compatible masters on
// loopback ports, with the faults a deployment meets — a master killed
// (connections refused), restarted empty as a new process, frozen (calls
// time out), or slow (every reply delayed). Nothing is installed: each
// master is a miniredis server in the test's process, behind a listener of
// this package that injects the faults.
//
//	func TestPayoutRunsOnce(t *testing.T) {
//		t.Parallel()
//		masters := redlocktest.Start(t, 5)
//		locks := masters.Client(t)
//		masters.Kill(0) // a minority down must not stop the payout
//		if err := locks.Do(ctx, "payout:42", pay); err != nil { ... }
//	}
//
// # What a master tells the library
//
// The library's restart guard (redlock.WithRestartGuard) reads, from inside
// its scripts, each master's LASTSAVE, INFO server (run_id,
// uptime_in_seconds) and INFO replication (role), or ROLE with the guard
// off. miniredis has neither LASTSAVE, ROLE nor those INFO sections; this
// package answers them for every caller, scripts included: each process of a master has its own random
// run_id, an uptime counted from its start, LASTSAVE at its start, and the
// role master. So a master brought back by Restart is a new process with an
// uptime from zero, and its grants are not counted for the guard, as a real
// master's would not be. The masters of a new Cluster are vouched for with
// redlock.TrustStart, as an operator does for a new deployment
// ("quorumlock trust"): they count at once.
//
// # Faults
//
// Kill closes a master's listener and connections and ends its process: its
// data is gone, and dials are refused until Restart brings up a new, empty
// process on the same address. Freeze stops a master as SIGSTOP does: the
// kernel still accepts connections, but nothing sent is processed and
// nothing is answered until Thaw. SetLatency delays every reply of a master
// by a duration, on connections old and new, across restarts (it is the
// network's, not the process's). All methods of a Cluster are safe for
// concurrent use, and Clusters are independent of each other: tests using
// them may call t.Parallel.
//
// # Fidelity
//
// TTLs run on the real clock, as a server's do. The masters serve what
// miniredis implements, which covers every command the library sends;
// MULTI blocks cannot contain INFO server or LASTSAVE. Speed is not a
// server's: miniredis runs each script in a fresh Lua state, so a call
// takes a few hundred microseconds more than on redis-server, and much more
// under the race detector on a loaded machine — hence Client's roomier
// node timeout (NodeTimeout).
package redlocktest

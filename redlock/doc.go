// Package redlock implements the Redlock algorithm: a lock held by a
// majority of N independent Redis masters, so that it survives the loss of
// any minority of them — a failover that loses a key on one master no longer
// hands the lock to a second holder.
//
// # Using it
//
// A Client is made once over the masters' clients; Lock waits for a key,
// TryLock makes one attempt, Do runs a function under the lock:
//
//	c, err := redlock.New([]redis.UniversalClient{n1, n2, n3, n4, n5})
//	...
//	err = c.Do(ctx, "payout:42", func(ctx context.Context) error {
//		return pay(ctx) // ctx is cancelled if the lock is lost
//	})
//
// LockMany, RLock and Acquire take the other kinds of hold (below); each is
// a *Lock, and Lock.Run runs a function under any of them as Do does.
//
// By default a held lock is renewed by a watchdog (WithAutoRenew), so work may
// run longer than the TTL; the TTL then only bounds how long a crashed holder
// blocks the others. A Client renews its locks together — one script call
// per node covers up to 100 locks, each tallied on its own, so one lock that
// cannot be renewed is lost alone — and a renewal sets the lock again on a
// node where it is missing and free (one restarted empty, or down at
// acquisition), counted once that node has been up for the restart guard:
// a lock does not decay while a majority of nodes is healthy. Concurrent
// calls of a Client to one node are pipelined: written together, their
// replies read together, each still under its own node timeout (see "Every
// wait on a node is bounded").
//
// # How a lock is acquired
//
// An attempt reads the monotonic clock, then sends one script to every node
// in parallel, each call under its own timeout (WithNodeTimeout) — enforced by
// the library whatever the redis client's settings, so a dead node costs at
// most one node timeout and a slow minority costs nothing once a majority
// answered. The script sets the key only if it is free or already ours, so a
// re-sent attempt succeeds instead of blocking itself. The lock is held if a
// majority granted it and the validity has not run out when they are
// counted:
//
//	validity = ttl − elapsed − (ttl·driftFactor + 2ms)
//
// A failed attempt is undone on every node that did not refuse it — the ones
// that timed out included, since a lost reply does not mean a lost write —
// and again on any node whose answer arrives late. Release and extension are
// compare-by-value scripts: nothing ever deletes or extends another owner's
// lock.
//
// # Every wait on a node is bounded
//
// Nothing the library does waits on a node longer than the node timeout plus
// a late window of min(4 × node timeout, 250 ms) — 100 ms at the default 25
// ms — whatever the redis clients' settings — but for the watchdog's own
// renewal rounds, on no caller's path, which wait until their most urgent
// lock's loss is due less one retry (their batches are read that long plus
// the late window; Close still ends them at once). A caller's call (Lock,
// TryLock, Extend, Unlock) returns at the node timeout; an abandoned
// call's outcome is awaited in the background for the late window more, so
// that a grant answered late is undone at once; subscriptions (dial,
// handshake, SUBSCRIBE, and the reads that set the connection up again)
// have the node timeout plus the window; Close waits that long for the
// work in flight, then drops the connections, which ends any read stuck on
// a frozen master — so Close returns within one node timeout plus the late
// window, a waiter subscribing to frozen masters included (measured: 0.50 s
// at a 250 ms node timeout, against 1.48 s when go-redis's own reader set
// the subscription up under its read timeout alone).
//
// This holds because New does not talk through the clients it is given: for
// each *redis.Client, *redis.ClusterClient or *redis.Ring it builds one of
// its own from the given one's options (address, credentials, TLS, Dialer,
// DB, protocol, OnConnect), with ContextTimeoutEnabled — go-redis otherwise
// reads a written command's reply until ReadTimeout (seconds, or forever
// with -1) whatever its context says — no retries (MaxRetries -1, one dial
// attempt), dials, reads and writes bounded by max(500 ms, 2 × (node timeout
// + late window)) where no context is tighter, a pool of ten connections,
// and neither client-side caching nor maintenance notifications. A batch
// of calls is read until its calls' latest deadline plus the late window,
// not cut at that fixed bound; unanswered then, it is cut and its
// connection dropped. Beside a node's first call, and after a call that got no answer,
// one PING at a time sets up a connection in the background under four times
// that larger bound, so that a connection slower to set up than one call may
// wait (a handshake of several round trips on a slow link, a starved
// process) is still made, and pooled for the calls after it. Close closes
// these clients, never the given ones. Hooks added to a given client do not
// see the library's commands. Any other UniversalClient (a wrapper of the
// caller's) is used as it is: calls still return at the node timeout and
// late outcomes are awaited for the window at most, but a batch stuck on it,
// and so Close, are bounded only by that client's own timeouts.
//
// Concurrent calls to a node are pipelined: one batch in flight per master
// (per shard primary of a cluster member),
// the next formed while it runs. A batch whose callers have all passed their
// deadline (a blackholed master swallowed it) no longer holds up the next:
// that one goes out at once on another connection (at most eight such
// batches per master run beside it). So after a blackhole of any length
// heals, the next call to that master succeeds within two node timeouts:
// within one the batch in flight goes overdue, and the next batch runs on a
// fresh connection.
//
// # Late grants
//
// With one connection and one batch in flight, a request never overtook an
// earlier one: an undo always landed after the grant it undoes. A dropped
// connection gives that up — its request may still be in the network or in
// the server's socket buffer, and run after a later request sent on another
// connection — so a grant may land after its undo, and an extension after
// the release. The library does not chase such a write (it cannot know when,
// or whether, it lands); it is harmless, script by script:
//
//   - A late grant (acquire.lua, racquire.lua, permit.lua; extend.lua's
//     repair) is checked by its script when it runs, like any grant: it
//     takes a key only if it is free or already the same owner's. Exclusion
//     reasons only about which owner each node holds at each moment, so it
//     holds. The grant's hold belongs to an attempt that is over, or to a
//     Lock already released — hold ids are random per attempt and never
//     reused — so no tally counts it and no renewal names it: its hold's
//     own lease end is one TTL after it lands (each hold keeps its own;
//     renewals of the owner's other holds move theirs, not it), and the key
//     stays on that node until then even if the owner's other holds are
//     released before. Meanwhile that node refuses other owners, as under a
//     crashed holder's lease, and grants the same owner as it would anyway.
//     Its fencing counter only grows: tokens stay monotonic.
//   - A late release or undo (release.lua, rrelease.lua) compares owner and
//     hold: it removes only its own hold, already released or never reused,
//     and an undo never removes another hold of its owner. A late
//     announcement wakes a waiter that then retries and is refused.
//   - A late refusal puts its waiter back in line, and a late leave
//     (leave.lua) takes it out: the line is wrong for one queue lease at
//     most (a few retry delays). Fairness may suffer that long; exclusion
//     does not, since every grant still needs the key free on a majority.
//   - A late write-back (fence.lua, a release's raise) raises a counter to a
//     token already issued: counters only grow.
//
// So a dropped connection costs liveness — a key blocked on one node for up
// to a TTL — never exclusion or the order of tokens.
//
// # What is promised, and under which assumptions
//
// While Err() is nil and the local clock is before Until(), no other Client
// holds the same key — for a reader (RLock), no writer does. This rests on
// the assumptions of Redlock itself:
//
//   - The masters are independent: no replication between them (a replica
//     promoted after a failover may lack the key; see Members that are
//     Redis Clusters and Sentinel members for replicas inside a member),
//     and not the same server
//     twice (New refuses the same address twice, and two cluster members
//     whose seed lists share an address; a cluster reached by two members
//     through different nodes is found at first contact, see One cluster,
//     one member; a plain master given twice through DNS aliases or NAT is
//     not caught).
//   - Clocks advance at about the same rate: the drift between the client's
//     clock and any node's over one TTL stays within ttl·driftFactor + 2ms.
//     Wall-clock jumps on the client do not matter (validity uses Go's
//     monotonic readings); a node whose clock jumps forward expires keys
//     early, which the drift allowance does not cover.
//   - A master that crashes either keeps its keys (appendonly with
//     appendfsync always, as the lab's redis.conf sets) or, if it comes back
//     without them, is not counted until every lease it could have granted
//     before has run out. Restart detection (on by default) enforces this,
//     for a Client that knew the node before the restart and for one that
//     meets it for the first time alike, since a process that just started
//     cannot tell a new master from one restarted empty: see Restarts below.
//     The cost: a master that has just started is not counted for the
//     longest TTL in use on the key (when other masters are up and answer),
//     and masters that all started together wait MaxRestartGuard before the
//     first lock — unless vouched for with TrustStart, which is for masters
//     that are new, never for ones that restarted (CheckNew tells them
//     apart). Detection needs INFO and LASTSAVE in scripts: a node whose
//     grant cannot say when it started (an ACL user without them) is not
//     counted, with ErrStartUnknown naming why. With detection off
//     (WithRestartGuard(0)), a master that restarts empty at once can grant
//     a key that a majority still held elsewhere.
//   - The nodes are masters: the first acquisition on each asks ROLE, and a
//     replica's votes are never counted (ErrReplica).
//   - No key is evicted: masters run with maxmemory-policy noeviction.
//
// The holder is told before its validity ends: Done() closes and Err()
// returns ErrLockLost a tenth of the TTL (at least one node timeout) before
// Until(), and Do cancels the ctx it handed to the function. TTLs too short
// to leave that margin after an acquisition that took a whole node timeout
// are refused, and an acquisition that leaves less than the margin fails. What the library cannot do is
// stop a holder that ignores this — or one paused (GC, swap, SIGSTOP) past
// its validity — from writing afterwards. Fencing tokens close that gap:
// Token() grows with each holding of a key, and a store that rejects writes
// carrying a token smaller than the largest it has seen rejects the late
// writer. Package fence is such a store on Redis, and fence/sqlfence a row
// checked inside the caller's SQL transaction.
//
// # Restarts
//
// A node Y whose process started at S may have lost a lease L only if L's
// last write on Y — its grant, or the renewal that last reached Y — came
// before S. The holder counts L's validity from the start of that round,
// so L ends before S + TTL_L: once Y has been up for TTL_L, it cannot
// have lost L while L is still valid. Y's grant of a key may therefore
// count once Y has been up for the longest TTL of any lease of the key that
// may still live — whoever holds it, with whatever TTL. That is the
// restart guard; this is how a Client learns it without being told.
//
// Every grant (and repair) of a writer's lock or a permit records its TTL
// in the lock itself (its field "ttl", the longest among its holds, nested
// ones included), so the record lives exactly as long as the lease;
// readers record none, and a node that live readers hold reports its
// record as unknown, read as MaxRestartGuard. A node reports the longest
// record of everything it holds on the keys asked, whatever it answers:
// for a semaphore, of every permit, not only the one it grants. While a Client knows a node to be young — up for less
// than MaxRestartGuard (or the acquisition's TTL, if longer) and not
// vouched for — every node it asks reports the record of the keys asked,
// grants and refusals alike (and its start, if new to the Client); a young node's grant waits for the
// round's other answers and counts once the node has been up for the
// longest record among them (at least the asking acquisition's TTL). A
// Client meeting the nodes for the first time asks all of them anyway, so
// its very first round carries the records.
//
// Why the records suffice: let L be a lease still valid, lost by a young
// node that grants. If L's TTL is at most MaxRestartGuard, a node of L's
// majority that is old (up for MaxRestartGuard, or vouched for) has not
// restarted since L's last write there, so it still holds L: it refuses
// — or, for a semaphore, may grant another permit — and either way
// reports L's TTL (or, for readers, MaxRestartGuard). So whenever a
// node that still holds L answers — an old node of L's majority always
// does — the guard covers L. What remains is a lease that every node
// still holding it fails to report: its whole majority lost it (masters
// that all just started, or a majority restarted empty at once, a power
// cut) or does not answer. A round in which no old node answered assumes
// the worst: its young nodes count only after MaxRestartGuard.
//
// The assumptions this adds to Redlock's: no lease has a TTL longer than
// MaxRestartGuard unless every client of the masters sets WithRestartGuard
// to at least it; and a round in which an old node answers also hears from
// a node that holds each valid lease of the key — which fails only when
// every node that holds a still-valid lease lost it in an empty restart or
// is cut off from the asking client, while old nodes that never held it
// answer. WithRestartGuard(d) sets the guard instead, the same for every
// node and key (0: detection off).
//
// # Members that are Redis Clusters
//
// A member may be a Redis Cluster of several shards: one vote, whichever
// shard a key lives on. A lock's keys share one hash tag, so each script
// runs on one server, the primary that owns the lock's slot, and the
// argument of Restarts holds per shard once the start it relies on is that
// primary's own. So a Client keeps a start per answering server, keyed by
// its cluster node ID, which the script reads (CLUSTER MYID) and returns in
// its reply; the restart argument it sends carries the LASTSAVE last seen
// from each server ("@id:LASTSAVE,..."), from which the script picks its
// own. A reply is judged by the state of the server that sent it, read in
// the same critical section that recorded what it said: a shard primary
// restarted empty (new run_id, same node ID) sits out the guard while the
// member's other shards keep counting at once, and no shard's reply
// borrows another's start. On a plain master the map has one entry and the
// argument is the LASTSAVE as before: the same calls, the same cost.
//
// Vouching is per primary. TrustStart on a *redis.ClusterClient vouches
// every primary (ForEachMaster); a script may read only keys of its own
// slot, declared in KEYS, so each primary writes one record per slot it
// serves, TrustKey followed by a hash tag of that slot ("{1bz}"), valued
// its own run_id, and the scripts declare the record of the lock's slot as
// their last KEY. 16384 records of a few dozen bytes per cluster, written
// in pipelines of 512 per primary and expiring after a day, against any
// cheaper scheme: TrustStart cannot know the locks' own hash tags, and one
// record per primary would be a key outside the lock's slot. The record is
// read only when a reply reports a start (the INFO path), never on the
// common path. A replica is never vouched for, and a replica promoted
// later does not inherit the vouch: its run_id is its own. A slot moved by
// resharding carries its record to a server of another run_id, which it
// does not vouch for either. CheckNew on a cluster client surveys every
// primary: the member's locks are all of theirs, its start its youngest
// primary's.
//
// Calls are grouped per shard. A Client sends a cluster member's calls
// through one route per primary — a client of its own and a pipe — chosen
// by the slot of the call's keys in the member's slot map (the
// ClusterClient's), so a shard that is slow, paused or restarting holds up
// only its own keys' batches; an extension round's calls go per slot, a
// slot's failure fails only its own locks' votes, and the watchdog's
// batches are split so that each round's locks share one primary per
// member. A slot map gone stale is met with a redirect: MOVED (the slot
// has a new owner) reloads the map and sends the call once more to the
// owner named; ASK (the slot is being migrated and its keys are not on the
// source) sends it once more to the importing node, after ASKING on the
// same connection in the same batch. A redirect is not an answer about the
// lock: a vote counts only from a script's reply, which comes from the
// server that ran it, the slot's owner (or the importing node under
// ASKING); a second redirect, TRYAGAIN (a multi-key script while a
// migration splits the slot's keys) or CLUSTERDOWN fails the vote, as any
// error does. A primary that cannot be reached also has the slot map
// reloaded, for its replica may have replaced it.
//
// What this assumes of a cluster member, besides what it assumes of a
// master: each primary keeps its data across restarts or comes back as a
// new process (a new run_id) — both covered, the second by the guard;
// maxmemory-policy noeviction on every node; one hash tag per lock (the
// library's keys have one). cluster-require-full-coverage no is advised: a
// shard that is down then stops only its own keys, whereas with yes it
// stops every shard of its member (availability, not safety).
//
// Failovers and moved slots. A replica promoted after it missed writes
// (CLUSTER FAILOVER FORCE or TAKEOVER, an automatic failover before the
// dead primary's last writes reached it) has been up since before the
// write it missed: neither its uptime nor its run_id shows anything. So a
// server counts for a slot only from when it took the slot over. Each slot
// has an owner record (quorumlock:slot-owner:{tag}, declared after the
// trust record), naming the primary that serves it — node ID,
// master_replid and config epoch (CLUSTER INFO: cluster_my_epoch) — and
// since when, on its own clock. A script reads it (prelude.lua:
// served_ms):
//
//   - It names this server and its master_replid: the server has served
//     the slot since the record says.
//   - It names this server and its config epoch, under another
//     master_replid: the same term, the record keeps its since. A
//     primary's master_replid changes without a failover when it frees
//     its backlog after repl-backlog-ttl with no replica (it then rotates
//     the ID, and second_repl_offset goes back to -1) and when its process
//     restarts (whose start the guard covers anyway; a restart without
//     data takes the record with it).
//   - It names another server, or this one under another config epoch: a
//     failover or a moved slot. The record starts again from now.
//   - It is missing: it starts from now, or from the process's start on a
//     server that has been a primary since it started — no second
//     replication ID and no replication stream ever received
//     (second_repl_offset -1, total_net_repl_input_bytes 0).
//
// Every reply says how long its server has served the slot, and the grant
// is judged as if the server had started then: a promoted replica, fresh
// or stale, sits out the guard for that slot, as a restarted primary does,
// while the member's other shards keep counting. TrustStart writes each
// slot's record with "since 0" for the primary it vouches, its replication
// ID and its config epoch. The cost is one INFO replication and one HMGET
// per script on a cluster member (about 2.5 µs of server time); CLUSTER
// INFO (which walks the 16384 slots) and INFO stats only when a record is
// written anew; a plain master is untouched. Scripts on a cluster member
// need CLUSTER MYID and CLUSTER INFO besides what Restarts needs.
//
// What the owner records assume, besides the above: Redis gives a server
// a new config epoch, larger than any its cluster has seen, whenever it
// is promoted (a failover of any kind, an election), and when it imports a
// slot (CLUSTER SETSLOT … NODE on the importing node) unless its epoch is
// already the largest. A primary loses its slots only to a promotion or by
// migration, and regains them only by a promotion of its own or by
// migration, which brings the keys and their record along. So a record
// naming a server and its current epoch was written in the server's
// current term as a primary, and the server has not been a replica since:
// it missed nothing of what it granted. The superseded primary stops
// taking writes by the time the promoted one's guard ends — it does once
// it hears of the promotion (milliseconds, over the cluster bus); a
// primary cut off from the rest of its cluster keeps taking writes from
// clients that still reach it until cluster-node-timeout, so
// WithRestartGuard should then exceed the longest TTL by that much. A
// TAKEOVER on one side of a partition whose other side keeps its primary
// serving clients is two primaries for one slot — no lock survives that.
// Not covered: a replica that never received anything from its primary
// since its own process started, promoted to serve a slot of which it
// holds no record, counts from its process's start, its data what it
// loaded then; CONFIG RESETSTAT on a promoted server before its slots have
// records hides that it was a replica. Slots of a lost shard given to
// another primary without their data (CLUSTER ADDSLOTS, redis-cli
// --cluster fix) are a restart without data that no record shows: give
// them only once the longest TTL in use has passed since the shard was
// lost. Every failover, clean or not, costs the promoted server's slots
// one guard; a lock held there is kept by its other members, and renewals
// repair it on the promoted server. Records written by a version without
// the epoch start again from now when the replication ID changes.
//
// # Sentinel members
//
// A member may be a Sentinel-managed master set, given as one
// redis.NewFailoverClient: its master and replicas count as one vote, cast
// by whichever server the sentinels name master. The library's own client
// of the member keeps the failover client's dialer, so each connection it
// sets up goes to the master the sentinels name then; connections to a
// demoted master end when its sentinel reconfigures it (Sentinel kills its
// clients) or when it stops answering.
//
// A failover promotes a replica that may lack grants its master made just
// before (the link cut, the master's last writes lost with it). Its run_id
// and uptime are those of a process up since long before, so the guard
// (Restarts) would count it at once. So, as a cluster member's servers do
// per slot, a Sentinel member's master counts only from when it became the
// master it is now. Its scripts read an owner record (quorumlock:
// master-owner, declared after TrustKey; prelude.lua: master_served_ms)
// naming the master — run_id, master_replid, total_net_repl_input_bytes —
// and since when, on its own clock:
//
//   - It names this master_replid: the master has served since the record
//     says. A replica shares its master's ID but runs no write script; a
//     promotion gives a new ID.
//   - It names this process (run_id) and the same replication input, under
//     another ID, with second_repl_offset -1: the same term, whose ID was
//     rotated (a backlog freed after repl-backlog-ttl with no replica; a
//     promotion sets second_repl_offset instead). The record keeps its
//     since.
//   - Anything else — another process (the record came with a dataset
//     synced from another master), replication input received since the
//     record was written (the process was a replica meanwhile), a promotion
//     — starts again from now; a missing record, from the process's start
//     on a master that never replicated (second_repl_offset -1,
//     total_net_repl_input_bytes 0), else from now.
//
// A record written anew makes the reply report the process's start in
// full, so that a Client meeting the promoted master learns its run_id
// even if its LASTSAVE reads as the old master's did. The reply says how
// long the master has served, and the grant is judged as if the server had
// started then: a promoted replica sits out the guard, from its promotion,
// while the other members count. The cost on a Sentinel member is one
// INFO replication and one HMGET per script (about 3.3 µs of server time,
// measured on a busy 2-core host beside 3.3 µs for an empty script), INFO
// server and stats (about 8 µs) only when the record is written anew;
// plain and cluster members are untouched.
//
// What this assumes, besides what Restarts assumes: every grant on the
// member runs with restart detection on (a grant made with
// WithRestartGuard(0) writes no record); replica-read-only yes (the
// default) on the replicas; the old master stops taking writes by the time
// the promoted one's guard ends (Sentinel reconfigures it once it hears
// from it; one cut off from its sentinels keeps granting to clients that
// reach it — as with any failover, give min-replicas-to-write or a guard
// longer than the longest TTL by that much); a master demoted to a replica
// receives something from its new master (a sync, a PING) before it is
// promoted again, or a script runs on it between that promotion and a
// rotation of its ID (otherwise its own old record, unchanged, would be
// taken for its current term; Sentinel does not promote a replica whose
// link has been down for long). CONFIG RESETSTAT on a master hides that it
// replicated and resets the replication input the record compares: a
// record then starts again from now, except a missing one on a server
// promoted and reset before any script ran. TrustStart writes no owner
// record: a vouched master of a Sentinel member still counts from its
// promotion or, if it never replicated, its start. Every failover costs
// the member one guard; a lock held there is kept by the other members,
// and renewals repair it on the promoted master.
//
// # One cluster, one member
//
// Two members that reach one cluster would be one failure counted twice.
// New refuses members whose seed lists share an address, but it does not
// wait on the nodes, so it cannot see two members seeded with different
// nodes of one cluster, or a plain client of a cluster node beside a
// cluster client of that cluster. Those are found by the members' node
// IDs: New starts, for each member, a read of the node IDs of its cluster
// (CLUSTER SHARDS through the member's client — every node, replicas
// included; CLUSTER NODES before Redis 7.0), with INFO server sent at
// once: a server whose INFO does not say redis_mode:cluster has none (an
// embedded fake answering CLUSTER with a made-up ID included). The read
// runs in the background, through the member's route (on a cluster
// member, that of the primary owning the triggering call's key), whose
// first connection it sets up for the first call, under the budget of the
// background connection set-up, so a slow handshake still ends in a read.
// Each member's IDs are compared with those of every member read before
// it. A member whose IDs meet another's is refused, and so is the other:
// every later call to either fails with ErrSameCluster naming both — a
// lasting failure, never counted — and every acquisition of the Client
// fails with it at once. Until its read has answered, a member's replies
// are not counted: a call waits for the read within its own context, and
// fails if the read has not answered by then (a failed read is started
// again by the next call). A call sent before the read answered may have
// acted on the server; not counted, it is a failed vote, undone like any
// other.
//
// Why refuse both, and for good, rather than count one of them: the
// configuration is wrong — New would have refused it — and a Client that
// went on granting with the cluster counted once would tolerate fewer
// failures than its operator believes, silently. Why New does not wait for
// the reads and refuse: Clients are built while members may be down or
// slow, and New must not block on them; a check bounded in time there
// would miss those, so the check before counting would be needed anyway,
// and one rule is simpler to reason about. What it costs: two small
// commands per member, once per Client, sent by New; a first call made at
// once may wait for them (about one round trip); a member whose read fails
// does not vote — down, or a user refused CLUSTER on a cluster node, or
// refused both INFO and CLUSTER (NOPERM, lasting).
//
// The argument: a reply counts only after its member was cleared, and
// clearing happens under one lock, each member compared with all cleared
// before it. Of two members of one cluster, the second to be read is never
// cleared; the first may have been counted until then, but alone — the
// cluster counted once. A lock granted before the second was read holds as
// usual; from then on neither member confirms its extensions, so it
// continues only if the other members are a majority by themselves. What it
// does not see: two members read at times between which every node of the
// cluster was replaced (no ID in common), and aliases of plain masters.
//
// # Waiting, in order
//
// Lock waits in line. Each waiter takes a ticket (the time of its first
// attempt) and is queued on every node it asks; a free lock is granted only
// to the oldest live ticket, and since every node orders the same tickets the
// same way, the nodes agree on who is next instead of splitting their votes.
// Unlock publishes, on the key's channel, the owner first in line, and only
// that waiter retries at once: a handoff costs about one round trip. The
// Client listens with one subscription connection per node, shared by all
// its waiters, opened with the first waiter and dropped with the last. A
// waiter that gives up leaves the queue; one that crashed loses its place
// when its queue lease (a few retry delays) runs out. If a wake-up is lost,
// the waiter's backoff — never longer than WithRetryDelay's maximum, and
// shortened to the holder's remaining lease — brings it back. Once the
// servers have confirmed the subscription to its key's channel on a
// majority of the nodes (a release reaches a majority, so one of them
// announces it), a waiter a majority refused does not poll: it sleeps
// that maximum (or the holder's remaining lease) unless woken, and a Lock
// whose Client already listens on the key joins before its first attempt.
//
// The cost of order: a contended attempt also refreshes the waiter's place
// (two sorted-set writes), and while anyone waits, TryLock is refused even on
// a free lock — it may not jump the queue.
//
// # Readers and writers
//
// RLock takes a shared hold of a key: any number of readers hold it at
// once, or one writer (Lock, TryLock, LockMany). On a node a reader is a
// member of the key's readers set, scored by its lease end in the node's
// milliseconds; a writer's grant there needs no live reader, a reader's
// needs no writer's lock. Safety is the lock's argument once more: each
// holding needs a majority, any two majorities share a node, and that node
// cannot have granted both while both leases run. A reader's lease on a node
// is the TTL, counted by the node's clock as a lock's expiry is, and its
// validity, renewal, loss and release are a lock's: Done closes before
// Until when it is lost.
//
// Readers wait in the same line as writers, by the same tickets (as
// "r:<owner>"): a reader is granted only when no writer waits ahead of it
// (TryRLock: when no writer waits at all), a writer only when it is first in
// line and no reader holds. So a writer is not starved by a stream of
// readers: each reader that asks after the writer took its ticket waits
// behind it, and the writer waits only for the readers holding or in line
// before it — each reader asks for one hold at a time, so at most one hold
// per reader — as long as its clients' clocks, which order the tickets,
// roughly agree. A writer's Unlock wakes every reader waiting behind it at
// once (its announcement names no one); the last reader's Unlock wakes the
// writer first in line. A waiting reader, granted, keeps its place until
// Unlock, as a writer does, so that a grant undone after the attempt failed
// elsewhere leaves it first there next time.
//
// An owner's readers and writer are not one holder: with WithOwner, asking
// to write while holding a read — or to read while writing — waits for
// oneself, as with sync.RWMutex. Its readers nest, though: a reader of an
// owner that already reads the key on a node is granted there at once,
// even while a writer waits in line — that writer waits for the owner's
// first read, so the owner must not wait for it. The price: an owner that
// always keeps one read held keeps writers waiting, as any reader that
// never lets go would.
//
// # Reentrancy
//
// Locks are not reentrant unless an owner is named with WithOwner: then
// acquisitions of a key by the same owner nest, each with its own hold on
// the nodes, and the key is freed when the last hold is released. A re-sent
// attempt whose reply was lost carries the same hold, so it never counts
// twice.
//
// Each hold keeps its own lease. On a node a hold records its lease end —
// its TTL from its grant or last renewal, by the node's clock — and the
// key's expiry there is the latest lease end among the owner's live holds,
// set again by every grant, renewal and release. So holds of one owner
// with different TTLs (a per-call WithTTL, or processes sharing a job ID
// as owner) never cut each other's lease: renewing or releasing a short
// hold never shortens the lease a longer one relies on, whichever came
// first, and the key is free once every hold was released or ran out. The
// same holds for LockMany's keys and a semaphore's permits; readers are
// members of their own, each with its lease, already.
//
// # Fencing tokens
//
// On each grant a node issues the larger of its counter for the key plus
// one and its own clock in microseconds, and stores it as the new counter;
// Token() is the largest value among the granting majority. Before Lock or
// TryLock returns, that token is written back to every granting node that is
// behind, so a majority of nodes holds a counter at least as large; Unlock
// raises the counter of every node that answers to it as well.
//
// A counter lives as long as its key is held, and a retention more: every
// grant, renewal and release that touches it keeps it for at least
// WithFenceRetention from then (a day by default; always longer than the
// TTL), a write-back keeps what its grant set, and none shortens what a
// holder with a longer retention set.
// So no counter expires while any hold of its key — a writer, a reader, a
// nested hold, a permit — still lives, however long it is renewed. A key
// left untouched for longer than the retention loses its counters, so
// locking many distinct keys leaves nothing behind. Its next grant then
// issues the node's clock in microseconds; a reader or a nested hold that
// finds no counter takes the clock too (and stores it as the counter). A
// nested hold's token is the counter of its granting nodes, at least the
// outer holding's: its majority meets the one the outer token was written
// back to, whose counters live as long as the outer hold.
//
// Why tokens only grow. A later holding's majority intersects the majority
// the earlier token was written back to. If a node in both still has its
// counter, it was raised to the earlier token before it could grant again —
// its key was still set until the earlier holder released it or it expired,
// and both happen after the write-back — so its next value is larger, and so
// is the maximum. If every node in both lost its counter — restarted empty,
// after which it is not counted for one restart guard (at least a TTL), or
// its counter expired a retention after the last holding — the later token
// comes from a node's clock, read at least a TTL after the earlier token was
// issued (the restart guard is at least the TTL of the asking acquisition,
// and covers the earlier holding's TTL as Restarts says). It is larger as long as the masters' clocks differ from each other
// by less than that, and none steps back by as much: the assumption tokens
// add to the lock's. With restart detection off and
// immediate empty restarts, neither the lock nor the order of tokens is
// promised.
//
// A reader issues no token: its Token is the largest counter among its
// grants (a node's clock where it had none), written back to them as a
// writer's is. That is at least the token
// of every writer that released the key before it: the reader's majority
// meets the one that writer's token was written back to, at a node that
// granted the reader only after that writer's lock there was gone — with
// the counter, at least that token, or, once it expired a retention later,
// with the node's clock, larger still. And
// every later writer's token is larger than it, by the argument above: the
// later writer's majority meets the reader's, at a node whose counter
// already held the reader's token when it granted the writer, since it did
// so only once the reader's lease there had ended.
//
// Tokens are large numbers (about 1.8e15 today) and not consecutive: a store
// should compare them, never count them.
//
// # Several keys, all or none
//
// LockMany holds several keys as one Lock. On each node one script call
// takes every key or none, so two callers whose sets overlap never each hold
// part of the other's set: no deadlock, in any order. A node counts for the
// lock only where it granted every key; renewal, Extend and Unlock cover
// every key in one call per node, and a node that no longer holds one of
// them counts as lost for the whole lock, so its keys are lost together.
// Each key is fenced on its own (TokenOf); Token is the largest of them.
// The argument for exclusion is the single-key one, per key.
// A waiting LockMany is in line on each of its keys, woken when any of them
// is released; the queues on the nodes order every waiter by the same
// ticket, so the oldest waiter is first in line on all of its keys and
// waits only for holders.
//
// # Semaphores: why no limit + 1 holders
//
// Counting holders on each node does not survive a quorum: with 5 masters and
// a limit of 2, holders admitted by masters {0,1,2}, {2,3,4} and {0,1,3,4}
// fit in every node's count (9 admissions in 5 × 2). Acquire hands out
// permits instead: permit i of a name is a mutex on a key of its own, and a
// holder holds exactly one of them, granted by a majority of nodes for that
// permit (a round in which the nodes granted different permits counts each
// permit's grants apart, and undoes the rest). If limit + 1 holders each held
// one of limit permits, two would hold the same permit at the same time — two
// majorities granting one key while both were valid, which the single-key
// argument above excludes. Renewal, loss, fencing (per permit: Permit and
// Token) and restart detection are the single key's.
//
// This holds when every holder counts with the same limit. Each grant
// records its limit on its node, and a node refuses another limit while a
// permit of the recorded one is held there; a holder's permit is held on a
// majority, which meets the majority another attempt needs, so an attempt
// with another limit cannot win while anyone holds a permit (Acquire returns
// ErrInvalid). The record lives for at least the fencing retention after
// the last grant or renewal of a permit held with it — the watchdog's
// renewals keep it as they keep the permit, none shortens it, and a node
// that lost both gets both back from the renewal's repair — so it outlives
// every permit held with it. Only
// holders that stop renewing, yet keep using their permit past its validity,
// or an operator deleting the record, leave a gap; even then the bound
// degrades only to the larger limit: permit i is the same key whatever the
// limit, so holders of two limits still share each permit index, and at most
// max(limit) of them hold one at once.
//
// Waiting is one line per name, in ticket order: a node grants a free permit
// to a waiter only while fewer live waiters are ahead of it than permits are
// free there, so freed permits go to the oldest waiters and none stays idle
// while someone waits. A TryAcquire counts behind every waiter.
// A release wakes the oldest waiter at once through the name's channel.
// An owner given WithOwner holds at most one permit of a name: a nested
// Acquire of the same owner adds a hold on the permit it already has.
// Acquire refuses, with ErrInvalid and nothing sent, an empty or too long
// name and a limit outside [1, MaxLimit]; an Acquire with another limit
// than the current holders' fails with ErrInvalid, having changed nothing.
//
// # Leader election
//
// Campaign is Lock of the name under an owner of its own, auto-renewed by
// default, followed by one more round (lead.lua) that writes the Lock's
// token as the leader's term, and its value, into the lock's hash on every
// master that still holds the hold, and announces the new leader on the
// name's :leader channel; Campaign returns once a majority has them (that
// round is not cut short by ctx: a leader Leader may report has been told),
// else it resigns and campaigns again. At most one leader per name follows from
// the lock (two leaderships at once would be two holds of one key), and
// strictly growing terms from the fencing tokens ("Fencing tokens"). The
// mark lives in the lock's hash, so it is renewed, released and expires with
// the hold and can outlive it nowhere; a master the watchdog repairs gets it
// again. Leader counts a leadership only where a majority of masters record
// the same holder, term and value with a lease left after the read's
// elapsed time and the drift: a leadership that no majority holds any
// more is never reported, and every later one has a larger term. The
// Client keeps the largest term it reported per name and reports no
// smaller one (ErrNoLeader instead), so that a Client's Leader and Observe
// never go back in term, even when masters restarted empty.
//
// # Keys
//
// A key is at most MaxKeyLen bytes. On a node it becomes <prefix>{key} and
// its siblings (:fence, :queue, :leases, :readers, and the :free and
// :leader channels),
// one hash tag, so that a node may be a Redis Cluster; a key containing '}'
// is escaped inside the braces, so every key works there. Every
// key the library writes expires: the lock with its lease, the waiters'
// queue with the waiters' leases, the readers with the longest reader's
// lease (Redis 7.0 has no TTL per member: a reader is scored by its lease
// end, and dropped once it passed), the fencing counter with its retention.
// A semaphore's names share the name's hash tag, apart from a Lock's of the
// same key (PermitKeys, LimitKey): each permit is a lock with its own
// fencing counter, the line and channel are the name's, and the record of
// the holders' limit expires a fencing retention after the last grant or
// renewal of a permit.
//
// Keys maps a key to its names one-to-one: the hash tag is the key itself
// unless the key contains a '}' (which would end the hash tag early and
// scatter the names over several Cluster slots) or starts with '%'; such
// keys are written as '%' followed by the key with every '%' escaped as %25
// and every '}' as %7D. Permit i of a semaphore's name is
// <prefix>{<tag>}:permit:<i> with its fencing counter
// <prefix>{<tag>}:permit:<i>:fence (a permit has no readers: the Readers
// name PermitKeys gives is never written), beside the name's
// <prefix>{<tag>}:permits:queue, :permits:leases, :permits:free (the
// channel) and :permits:limit (LimitKey), <tag> as for a key.
//
// # Clients
//
// A Client acquires locks on a fixed set of independent Redis masters; a
// lock is held when a majority of them (N/2+1) granted it. It is safe for
// concurrent use and must not be copied.
//
// New refuses, with an error matching ErrInvalid: no nodes, a nil node, the
// same client or the same address twice, two members given a common server
// (cluster seed lists [a b c] and [b]), and invalid options. A Sentinel
// failover client (redis.NewFailoverClient) is one member, a master set
// ("Sentinel members"); every such client has the same placeholder
// address, which New does not compare. It never
// waits on the nodes: it starts, in the background, reading each member's
// cluster node IDs (a Sentinel member's master identities), so that two
// members that reach one cluster or master set through seeds it cannot
// compare ([a] and [b], a plain client of one of its nodes, two failover
// clients of one set) are found before either is counted; from then on
// they fail with ErrSameCluster, as does every acquisition of the Client
// ("One cluster, one member"). An even number of nodes is accepted, with a warning
// through WithLogger's logger: 2 nodes tolerate no failure (the majority is
// both), 4 tolerate one, as 3 do. For each node given as a *redis.Client,
// *redis.ClusterClient or *redis.Ring, New builds the client the library
// talks through from its options, with settings that bound every wait (see
// "Every wait on a node is bounded"); hooks added to the given client do
// not see the library's commands. Any other UniversalClient is used as it
// is, and its own timeouts then bound what the library cannot.
//
// Close ends every lock still held — their Done() closes and Err() becomes
// ErrClosed — stops their renewals, makes waiting calls return ErrClosed,
// drops the subscriptions, and waits for the calls the Client still has in
// flight, one node timeout plus its late window at most; then it drops the
// connections of its own clients, which ends whatever still waits on a node
// (a frozen master), and closes them. It does not release the locks: they
// expire with their TTL, so Unlock them before Close. A Client never closes
// the redis clients it was given; over a client type it could not rebuild,
// the calls still in flight are bounded only by that client's own
// timeouts. Every call after Close returns ErrClosed.
//
// # A Lock and its methods
//
// A Lock is one holding of a key — or of several keys at once, all or none
// (LockMany), a reader's shared hold (RLock), or a semaphore's permit
// (Acquire) — granted by a majority of the Client's nodes. It is held until
// Unlock, until it is lost (Done closes and Err returns ErrLockLost), or
// until its Client closes. A Lock of several keys is held, renewed,
// released and lost as one: each node's vote covers all of its keys. A Lock
// is safe for concurrent use and must not be copied.
//
// Token is the largest value of the key's fencing counter among the nodes
// that granted the holding; a store that accepts a write only with a token
// at least as large as every token it has seen rejects the writes of a
// holder whose lock has since passed to another. For a Lock of several
// keys Token is the largest of their tokens, larger than every token of any
// earlier holding of any of the keys; a store fenced per key should use
// TokenOf, since a later holding of one key is ordered only after that
// key's token. A reader's Token is described under "Fencing tokens". A
// permit's holders are ordered per permit: two holders of one name hold
// different permits at any time, and a store fenced per permit (the name
// and Permit) orders each permit's holders by Token.
//
// Extend resets the lease on every node to the full TTL and moves Until
// accordingly. It succeeds only while the lock is valid and only if a
// majority of nodes extended it within the new validity; it never recreates
// a key that vanished. It returns ErrNotHeld after Unlock, an error
// matching ErrLockLost once the lock is lost (Done is then closed), and a
// *QuorumError matching neither when too few nodes answered: the lock then
// stays valid until Until, and Extend may be tried again.
//
// Unlock releases the lock on every node, in parallel, each call under the
// node timeout and detached from ctx's cancellation, so that a deferred
// Unlock still runs after ctx ended; renewal has stopped when it returns.
// It returns nil when a majority confirmed the release; an error matching
// ErrLockLost when the lock had been lost, or a majority no longer held it
// (the work done under it may have overlapped another holder's); ErrNotHeld
// when called again — nil, though, after Run released the lock, so that the
// habit of a deferred Unlock is harmless around Run; and a *QuorumError
// matching neither when too few nodes answered to tell — the lock then
// expires with its TTL where the release did not land. It never deletes
// another owner's lock.
//
// # Running a function under a lock
//
// Do acquires a key as Lock does, runs fn while the lock is held, and
// releases it; Lock.Run does the same for a hold already taken, of any
// kind (LockMany's, RLock's, Acquire's). The ctx given to fn carries the
// Lock (FromContext, for its token or its Until) and is cancelled as soon
// as the lock is lost or the Client closes, with the reason as its cause;
// fn should stop its work then.
//
// Do returns Lock's error if the lock was not obtained; both return fn's
// error otherwise, joined with ErrLockLost — one line, starting with
// ErrLockLost's, matching both — if the lock was lost before fn returned or
// Unlock found it gone (or with ErrClosed if the Client closed meanwhile).
// A release that too few nodes confirmed is not an error of Do or Run: the
// lock then expires with its TTL. If fn panics, the lock is released and
// the panic goes on.
//
// Run does not call fn if the Lock has ended already: it returns ErrNotHeld
// after Unlock, and for a lost Lock releases what is left of it and returns
// why it ended. A nil ctx or fn is refused with ErrInvalid, and the Lock is
// left as it was. Once Run has released a Lock, its Unlock returns nil, so
// a "defer l.Unlock(ctx)" written right after acquiring is harmless when
// the Lock is then handed to Run.
//
// # Options
//
// An Option configures a Client (as a default for all its locks, when given
// to New) or one acquisition (when given to Lock, TryLock, Do and the other
// acquisitions). Options are checked when used: a bad value makes that call
// fail with ErrInvalid. WithClock is an option of New only: one clock paces
// all of a Client's renewals.
//
// WithTTL: the validity a TTL leaves once an acquisition took a whole node
// timeout must still exceed the loss margin — ttl − drift > node timeout +
// max(node timeout, ttl/10) — or the lock could not be signalled lost in
// time; shorter TTLs are refused.
//
// WithAutoRenew: on (the default), a held lock is extended through the
// quorum every TTL/3 until Unlock or Close; if renewal cannot reach a
// majority before the validity runs out, the lock is lost and Done closes
// first, a tenth of the TTL (at least one node timeout) before Until. Off,
// the lock ends the same margin before its validity does. The watchdog's
// node calls may take up to four node timeouts (at most half the loss
// margin): they carry up to 100 locks each and are on no caller's path.
//
// WithMaxWait: when a waiting call's context has no deadline, the maximum
// wait bounds it; the error then matches context.DeadlineExceeded and says
// that the maximum wait ran out. WithRetryDelay's bounds also lease a
// waiter's place in line, for 5·max + the node timeout. MaxDuration bounds
// every duration option so that every lease and deadline derived from them
// (the waiters' queue lease; deadlines added to the clock; the scripts'
// milliseconds) stays far from overflow.
//
// WithOwner: every acquisition with the same owner — from any goroutine or
// process — counts as the same holder, so an owner must be unique to
// whatever should exclude others (e.g. a job ID). Its acquisitions of a key
// nest, each released by its own Unlock, each keeping its own TTL (see
// "Reentrancy"). Without an owner every acquisition is its own owner and
// locks are not reentrant, as with sync.Mutex. An owner may not be empty,
// nor start with "r:", which marks readers in the waiters' queues.
//
// WithRestartGuard(d) replaces the default guard of "Restarts": a node's
// grants are not counted until its server process has been up for d. d
// must cover the longest TTL any client of these masters uses; 0 turns
// detection off (for masters with appendfsync always, where a restart keeps
// the keys). Detection reads the node's LASTSAVE with every fresh grant —
// reset when a node starts, it costs next to nothing — and asks for run_id
// and uptime (INFO server) only when LASTSAVE changed since this Client last
// saw it: after a restart, or a save (LASTSAVE counts whole seconds, so a
// value is relied on only once seen two seconds after it). While a node is
// young, under the default guard, every reply also carries the keys' TTL
// record. A grant that cannot report its node's start — INFO refused to the
// user — is not counted (ErrStartUnknown). MaxRestartGuard bounds the
// default guard: a node up that long counts at once (unless the
// acquisition's own TTL is longer), and when no node up that long, nor a
// vouched one, answers, young nodes count after it.
//
// WithFenceRetention: a key's fencing state lives as long as any hold of
// the key and the retention more (see "Fencing tokens"); then it expires,
// so that locking many distinct keys leaves no state behind. Tokens still
// grow after it expired, as long as the masters' clocks did not step back,
// nor drift apart from each other, by as much as the time since the key's
// last holding (at least the retention). It must be longer than the TTL.
//
// WithObserver and WithLogger given to one call add to the Client's
// observers for that acquisition and its Lock — its later renewals, loss
// and node errors included. They are accepted per call rather than refused:
// New and the calls share one Option type, so an option of New only could
// be refused only when a call runs, not when it compiles; and an observer
// of one acquisition is well defined (tracing one job's lock), at no cost
// to the calls without one. WithLogger logs failed acquisitions and
// renewals, lost locks and node errors as structured records; without it
// nothing is logged.
//
// # Observers
//
// An Observer's methods are called synchronously, some on the acquisition
// path: they must be fast, must not block, and must be safe for concurrent
// use. A Client without observers (the default) pays one nil check per
// event. An Observer should embed NopObserver and implement only the
// methods it needs: an event added to the interface later is then a no-op
// for it instead of a compile error.
//
// Every method gets the context its event belongs to, so that an observer
// needs no state of its own to tie events together:
//
//   - AcquireStart gets the caller's; the context it returns (e.g. carrying
//     a span) is the acquisition's, given to AcquireDone and to NodeFailed
//     for the acquisition's node calls, and kept, without its
//     cancellation, as the Lock's own context.
//   - NodeFailed during Extend or Unlock gets the caller's.
//   - Renewed, Lost, and NodeFailed during a renewal — events of the
//     watchdog and of timers, on no caller's behalf — get the Lock's own
//     context: the acquisition's, without its cancellation or deadline, so
//     that it still carries what AcquireStart put in it (e.g. a span to
//     parent or link the event to) for as long as the Lock lives.
//   - NodeFailed of a call still running when its round was decided — a
//     frozen master's, in a round the others won — comes once the call
//     fails or times out (the node timeout plus the late window), possibly
//     after the call that ran the round returned, with that round's
//     context; so does the failure of a late answer's follow-up (undoing
//     a grant that came too late, releasing a node Unlock skipped).
//
// A panic in any method is recovered: it is logged at Error through the
// loggers of WithLogger among the event's observers (through
// slog.Default() if there is none), that observer misses the event —
// AcquireStart's context is then the one it was given — and the library
// goes on as if the method had returned: the acquisition returns its Lock
// or error, renewal, loss and release run, Close returns. A panic is still
// a bug of the observer: fix it.
//
// # Vouching for new masters
//
// TrustStart vouches that a node's current server process started with no
// lease to forget — a master just created, or started after every lease it
// could ever have granted had expired — so that Clients count its grants at
// once instead of after the restart guard. It records the process's run_id
// (TrustKey, expiring after a day): a later restart has another run_id, and
// the vouch does not carry over to it. Call it when bringing up new masters
// (a test lab, a new deployment), never after a restart that may have lost
// leases: that is exactly what the guard is for. On a *redis.ClusterClient
// it vouches every primary, on a client of one cluster node that node (see
// "Members that are Redis Clusters"); a replica is refused with ErrReplica,
// whether or not it accepts writes. It needs INFO, SET and HSET (and, on a
// cluster, CLUSTER MYID and CLUSTER SHARDS) on the node, and does not close
// it.
//
// CheckNew tells new masters from restarted ones by their own state: call
// it first, as the command "quorumlock trust" does. After a master
// restarted without its data while others held locks, a vouch would count
// it at once and could grant a key a holder still holds. So a node is
// refused (an error matching ErrInUse, an *InUseError) when any node given
// holds a live lock, reader or permit under the prefix, or when another
// node given has been up longer than it by more than NewSpread; a replica
// is refused with ErrReplica; a node CheckNew cannot read is refused with
// that error. A node whose running process is already vouched for is not
// checked: vouching again changes nothing. Pass every master of the
// deployment, so that their locks and starts are seen. A
// *redis.ClusterClient is surveyed on every primary (replicas are never
// vouched): its locks are all the primaries' locks, its start the youngest
// primary's, and a primary up longer than another by more than NewSpread
// shows the cluster in use, as between nodes. CheckNew reads INFO, the
// vouch (TrustKey, or on a cluster a primary's slot's record) and SCANs
// each node's keys under the prefix; it writes nothing.
//
// # Limits
//
// MaxKeys bounds how many keys LockMany and TryLockMany take at once: each
// node takes them all in one script call, which blocks that node while it
// runs, and the call must end well within the node timeout or every node
// times out and the keys' fencing state stays behind for the fence
// retention. Measured on three loopback masters (redis 7.0) on a loaded
// 2-core machine (BenchmarkTryLockManyUnlock): TryLockMany and Unlock of 64
// keys took 6.6 ms, of 256 keys 13 ms, of one key 4 ms; with the race
// detector and other tests sharing the cores, an Unlock of 256 keys outran
// DefaultNodeTimeout on every node, so the bound keeps a factor of about
// four below it. A Client with a longer node timeout still takes at most
// MaxKeys: split a larger set, or lock a name that stands for it.
//
// LockMany also refuses, when a node is a Redis Cluster (where one script
// may touch only one hash slot), keys whose names do not share a hash slot.
// Each key's names carry the key itself as their hash tag, so on a cluster
// node LockMany works only for keys that happen to hash to one slot: give
// LockMany independent masters instead.
//
// MaxKeyLen bounds a key (and a WithPrefix prefix) because a lock key is a
// name, not a payload, and every call sends it to every node several times.
//
// # Errors
//
// Every error the package returns is one line, starts with "redlock:" and
// works with errors.Is and errors.As: ErrNotObtained (with a *QuorumError
// listing each node's vote, whose errors may match ErrNodeRestarted,
// ErrStartUnknown, ErrReplica or ErrSameCluster), ErrLockLost, ErrNotHeld,
// ErrClosed, ErrSameCluster (every acquisition, once two members were
// found to be one cluster), ErrInUse from CheckNew, and ErrInvalid for input refused before anything
// is sent — a nil ctx at any call, more than MaxKeys keys, a duration
// option above MaxDuration (so that no lease or deadline derived from it
// can overflow). An acquisition
// that stopped because its context ended says so after the last attempt's
// error, on the same line, and matches ctx.Err() as well.
//
// ErrLockLost is returned when the quorum no longer holds a lock: renewal
// could not reach a majority before the validity ran out, or a majority of
// nodes confirmed that the lock's value was gone. Work done under the lock
// may have overlapped with another holder's. A QuorumError reports an
// acquisition without a majority (it matches ErrNotObtained), an extension
// or unlock that found the lock gone (ErrLockLost), or a round whose
// outcome no majority confirmed either way (neither: some nodes did not
// answer in time).
//
// Three errors of a node's vote say why a grant was not counted.
// ErrNodeRestarted: the node's server process started less than the
// restart guard ago — restarted, or new to this Client — so it may have
// lost a lock that a holder still holds; the error says how much longer
// the node must be up. ErrStartUnknown: restart detection is on and the
// node could not say when it started (e.g. an ACL user without INFO or
// LASTSAVE), so its grant may come from a master that just restarted
// without its data. ErrReplica: the quorum needs independent masters, and a
// replica beside its master would be two votes from one data set; a node's
// role is read with the grant that reports its start — at the Client's
// first contact with each server process — or, with restart detection off,
// asked (ROLE) at the first acquisition on it.
//
// Waiting is for what heals. A waiting call (Lock, RLock, LockMany,
// Acquire, Do) returns at once, with the attempt's error, when so many
// nodes fail for a lasting reason — a user that may not run INFO
// (ErrStartUnknown), a replica (ErrReplica), a command refused to the user
// (NOPERM), a connection the node will not set up until a setting changes
// (a wrong password: WRONGPASS; none given: NOAUTH; a DB it does not have;
// a TLS certificate not trusted or not the host's;
// the vote's error is the server's or crypto/tls's own) — that the other
// nodes cannot make a majority, or when two
// members are one cluster (ErrSameCluster, whatever the others): no wait could
// change that, and waiting would only turn the cause into a deadline the
// caller never set. Timeouts, refused connections, held locks and masters
// within the restart guard are waited for; the error of grants not counted
// for the guard says when a majority counts. A vote that timed out carries
// its node's real failure once known (a dial with the redis client's own
// dialer, started by the timeout: "connection refused" rather than only "no
// answer within the node timeout").
//
// Observers are user code on the library's paths; a panic in one is
// recovered and logged, and every path goes on as if the method had
// returned (see "Observers").
package redlock

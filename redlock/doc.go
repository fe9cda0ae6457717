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
// ms — whatever the redis clients' settings. A caller's call (Lock, TryLock,
// Extend, Unlock, a renewal) returns at the node timeout; an abandoned
// call's outcome is awaited in the background for the late window more, so
// that a grant answered late is undone at once; subscriptions (dial,
// handshake, SUBSCRIBE) have the node timeout plus the window; Close waits
// that long for the work in flight, then drops the connections, which ends
// any read stuck on a frozen master.
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
// unanswered at its deadline plus the late window is cut and its connection
// dropped. Beside a node's first call, and after a call that got no answer,
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
// Concurrent calls to a node are pipelined: one batch in flight per master,
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
//     Redis Clusters for replicas inside a member), and not the same server
//     twice (New refuses the same address twice, and two cluster members
//     whose seed lists share an address, but cannot see through DNS
//     aliases or NAT).
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
// writer.
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
// in the lock itself (its field "ttl", the longest among its holds), so the
// record lives exactly as long as the lease; readers record none, and a
// node that live readers hold reports its record as unknown, read as
// MaxRestartGuard. While a Client knows a node to be young — up for less
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
// restarted since L's last write there, so it still holds L: it refuses,
// and reports L's TTL (or, for readers, MaxRestartGuard). So whenever a
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
// in one pipeline per primary and expiring after a day, against any
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
// trust record), naming the primary that serves it — node ID and
// master_replid — and since when, on its own clock. A promotion gives the
// server a new master_replid (Redis shifts it at every promotion, and at
// every start), and a slot moved by resharding brings the previous owner's
// record along: either way the record no longer names the server, and the
// first script it runs for the slot starts the record again from now. A
// missing record starts from now on a server that has ever been a replica
// since it started (INFO replication: second_repl_offset), and from the
// process's start on one that has been a primary all along. Every reply
// says how long its server has served the slot, and the grant is judged as
// if the server had started then: a promoted replica, fresh or stale, sits
// out the guard for that slot, as a restarted primary does, while the
// member's other shards keep counting. TrustStart writes each slot's
// record with "since 0" for the primary it vouches, and its replication
// ID: a replica promoted later, or the vouched primary itself promoted
// back after a failover, has another one. The cost is one INFO
// replication and one HMGET per script on a cluster member (about 2.5 µs
// of server time); a plain master is untouched.
//
// What the owner records assume, besides the above: the superseded
// primary stops taking writes by the time the promoted one's guard ends —
// it does once it hears of the promotion (milliseconds, over the cluster
// bus); a primary cut off from the rest of its cluster keeps taking
// writes from clients that still reach it until cluster-node-timeout, so
// WithRestartGuard should then exceed the longest TTL by that much. A
// TAKEOVER on one side of a partition whose other side keeps its primary
// serving clients is two primaries for one slot — no lock survives that.
// A server with no replica for repl-backlog-ttl (1 h) rotates its
// master_replid: its slots then start again from the process's start, so
// a stale replica promoted more than an hour before it first serves a
// slot, with a lease longer than that, is not covered. Slots of a lost
// shard given to another primary without their data (CLUSTER ADDSLOTS,
// redis-cli --cluster fix) are a restart without data that no record
// shows: give them only once the longest TTL in use has passed since the
// shard was lost. Every failover, clean or not, costs the promoted server's
// slots one guard; a lock held there is kept by its other members, and
// renewals repair it on the promoted server.
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
// shortened to the holder's remaining lease — brings it back.
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
//
// # Keys
//
// A key is at most MaxKeyLen bytes. On a node it becomes <prefix>{key} and
// its siblings (:fence, :queue, :leases, :readers, and the :free channel),
// one hash tag, so that a node may be a Redis Cluster; a key containing '}'
// is escaped inside the braces (see Keys), so every key works there. Every
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
// # Errors
//
// Every error the package returns is one line, starts with "redlock:" and
// works with errors.Is and errors.As: ErrNotObtained (with a *QuorumError
// listing each node's vote, whose errors may match ErrNodeRestarted,
// ErrStartUnknown or ErrReplica), ErrLockLost, ErrNotHeld, ErrClosed,
// ErrInUse from CheckNew, and ErrInvalid for input refused before anything
// is sent — a nil ctx at any call, more than MaxKeys keys, a duration
// option above MaxDuration (so that no lease or deadline derived from it
// can overflow). An acquisition
// that stopped because its context ended says so after the last attempt's
// error, on the same line, and matches ctx.Err() as well.
//
// Waiting is for what heals. A waiting call (Lock, RLock, LockMany,
// Acquire, Do) returns at once, with the attempt's error, when so many
// nodes fail for a lasting reason — a user that may not run INFO
// (ErrStartUnknown), a replica (ErrReplica), a command refused to the user
// (NOPERM) — that the other nodes cannot make a majority: no wait could
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
// returned (see Observer).
package redlock

package redlock_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// The safety holes of issue 9, one test each, on real masters.

// safetyLab starts n masters the test can kill, restart and pause, vouched
// for as new (redlock.TrustStart), so that Clients count them at once.
func safetyLab(t *testing.T, n int) *redislab.Lab {
	t.Helper()
	l := redislab.Start(t, n)
	l.RequireControl(t)
	l.Trust(t, redlock.TrustStart)
	return l
}

// requireHeldOn fails t unless key's lock has an owner on each given node.
func requireHeldOn(t *testing.T, ctx context.Context, nodes []redis.UniversalClient, key string, idx ...int) {
	t.Helper()
	for _, i := range idx {
		owner, err := nodes[i].HGet(ctx, redlock.Keys(redlock.DefaultPrefix, key).Lock, "owner").Result()
		if err != nil || owner == "" {
			t.Fatalf("node %d: owner of %q = %q, %v; want the holder", i, key, owner, err)
		}
	}
}

// requireNoState fails t if any given node holds key's lock or fencing
// counter: the scenarios need masters that restarted empty, with no late
// write of the holder's landing on them.
func requireNoState(t *testing.T, ctx context.Context, l *redislab.Lab, key string, idx ...int) {
	t.Helper()
	kn := redlock.Keys(redlock.DefaultPrefix, key)
	nodes := l.Clients(t)
	for _, i := range idx {
		if n, err := nodes[i].Exists(ctx, kn.Lock, kn.Fence).Result(); err != nil || n != 0 {
			t.Fatalf("node %d: %d of %q's lock and counter exist (err %v), want none after an empty restart", i, n, key, err)
		}
	}
}

// failFast makes a holder's redis clients give up on a dead master at the
// first refused dial: go-redis would otherwise retry for longer than a
// restart takes, and a holder's late call could land on the restarted master
// and put its key or counter back.
func failFast(o *redis.Options) { o.MaxRetries, o.DialerRetries = -1, 1 }

// votesOf returns the per-node votes of a failed acquisition, failing t
// unless err matches ErrNotObtained and carries a *QuorumError.
func votesOf(t *testing.T, err error) []redlock.NodeVote {
	t.Helper()
	var qe *redlock.QuorumError
	if !errors.Is(err, redlock.ErrNotObtained) || !errors.As(err, &qe) {
		t.Fatalf("error = %v, want ErrNotObtained with a *QuorumError", err)
	}
	return qe.Votes
}

// retryEvery paces the repeated attempts of the tests below: often enough
// to catch a short window, seldom enough for a loaded two-core machine.
const retryEvery = 25 * time.Millisecond

// contend makes b try key again and again until held's validity is over.
// It fails t at once if b is granted while held is still held (Err() nil),
// and returns the votes of the attempts made while it was.
func contend(t *testing.T, ctx context.Context, b *redlock.Client, held *redlock.Lock, key string) [][]redlock.NodeVote {
	t.Helper()
	var attempts [][]redlock.NodeVote
	tick := time.NewTicker(retryEvery)
	defer tick.Stop()
	for time.Now().Before(held.Until()) {
		holding := held.Err() == nil
		l, err := b.TryLock(ctx, key)
		switch {
		case err == nil && holding:
			t.Fatalf("overlap: B granted %q (token %d) while A holds it (token %d, Err() nil, %v of validity left)",
				key, l.Token(), held.Token(), time.Until(held.Until()).Round(time.Millisecond))
		case err == nil: // A was told it lost the lock: no overlap
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("B: Unlock: %v", err)
			}
		case holding:
			attempts = append(attempts, votesOf(t, err))
		}
		<-tick.C
	}
	if len(attempts) == 0 {
		t.Fatal("B made no attempt while A held the lock: the test proved nothing")
	}
	return attempts
}

// requireVotes fails t unless every vote of the given nodes that was in
// when the round was decided matches, and at least least of them were in. (A
// round stops waiting once its outcome is settled: later votes stay Pending.)
func requireVotes(t *testing.T, votes []redlock.NodeVote, what string, match func(redlock.NodeVote) bool, least int, idx ...int) {
	t.Helper()
	in := 0
	for _, i := range idx {
		if v := votes[i]; v.Outcome != quorum.Pending {
			in++
			if !match(v) {
				t.Errorf("node %d: vote %v (error %v), want %s", i, v.Outcome, v.Err, what)
			}
		}
	}
	if in < least {
		t.Errorf("%d votes of nodes %v were in, want at least %d %s", in, idx, least, what)
	}
}

// neverGranted fails t if a given node's grant was counted in an attempt.
func neverGranted(t *testing.T, attempts [][]redlock.NodeVote, idx ...int) {
	t.Helper()
	for k, votes := range attempts {
		for _, i := range idx {
			if votes[i].Outcome == quorum.Granted {
				t.Errorf("attempt %d: node %d's grant was counted", k, i)
			}
		}
	}
}

// failedWith returns a vote matcher for a failed vote whose error is target.
func failedWith(target error) func(redlock.NodeVote) bool {
	return func(v redlock.NodeVote) bool { return v.Outcome == quorum.Failed && errors.Is(v.Err, target) }
}

// eventuallyLocked retries try, paced, until it returns a lock, failing t
// after d with the last error.
func eventuallyLocked(t *testing.T, d time.Duration, what string, try func() (*redlock.Lock, error)) *redlock.Lock {
	t.Helper()
	var l *redlock.Lock
	var last error
	defer func() {
		if l == nil {
			t.Logf("last attempt: %v", last)
		}
	}()
	next := time.Now()
	testkit.Eventually(t, d, what, func() bool {
		if time.Now().Before(next) {
			return false
		}
		next = time.Now().Add(retryEvery)
		l, last = try()
		return last == nil
	})
	return l
}

// holdOnThreeOfFive kills masters 3 and 4, then has A lock key with ttl
// and no renewal: A holds it on masters 0, 1 and 2 only.
func holdOnThreeOfFive(t *testing.T, ctx context.Context, l *redislab.Lab, key string, ttl time.Duration) *redlock.Lock {
	t.Helper()
	l.Kill(t, 3, 4)
	nodes := l.Clients(t, failFast)
	a := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithAutoRenew(false))
	held, err := a.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("A: TryLock with masters 3, 4 down: %v", err)
	}
	requireHeldOn(t, ctx, nodes, key, 0, 1, 2)
	return held
}

// Case 1: a brand-new Client meets masters that restarted empty at once —
// master 2 lost A's key, masters 3, 4 never had it. It must not count them
// until they have been up for the restart guard, although it never saw
// them before.
func TestSafetyFreshClientAfterEmptyRestart(t *testing.T) {
	const key, ttl = "stock", 3 * time.Second
	l := safetyLab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	held := holdOnThreeOfFive(t, ctx, l, key, ttl)
	l.Restart(t, true, 3, 4, 2)
	requireNoState(t, ctx, l, key, 2, 3, 4)

	// Another process's Client: new redis clients, the default restart
	// guard (its TTL) and nothing learnt about the masters.
	b := newClient(t, l.Clients(t))
	neverGranted(t, contend(t, ctx, b, held, key), 2, 3, 4)

	// On a key no one holds, masters 0, 1 grant: the round needs the votes
	// of all of 2, 3 and 4 to know that no majority is left.
	_, err := b.TryLock(ctx, "free")
	requireVotes(t, votesOf(t, err), "failed with ErrNodeRestarted", failedWith(redlock.ErrNodeRestarted), 3, 2, 3, 4)

	// With a guard that covers A's TTL, B gets the key once the restarted
	// masters have been up that long — with a larger token than A's.
	next := eventuallyLocked(t, 3*ttl, "B locks once the restarted masters are past the guard", func() (*redlock.Lock, error) {
		return b.TryLock(ctx, key, redlock.WithTTL(ttl))
	})
	if next.Token() <= held.Token() {
		t.Errorf("B's token = %d after A's %d, want larger", next.Token(), held.Token())
	}
	if err := next.Unlock(ctx); err != nil {
		t.Errorf("B: Unlock: %v", err)
	}
}

// An ACL user allowed everything but INFO: a lock script cannot learn when
// its node started.
const (
	aclUser = "limited"
	aclPass = "pw"
)

// allowAllButInfo creates the ACL user aclUser on the given nodes.
func allowAllButInfo(t *testing.T, ctx context.Context, l *redislab.Lab, idx ...int) {
	t.Helper()
	for _, i := range idx {
		c := redis.NewClient(&redis.Options{Addr: l.Nodes[i].Addr()})
		err := c.Do(ctx, "ACL", "SETUSER", aclUser, "on", ">"+aclPass, "+@all", "-info", "~*", "&*").Err()
		c.Close()
		if err != nil {
			t.Fatalf("node %d: ACL SETUSER: %v", i, err)
		}
	}
}

func asLimited(o *redis.Options) { o.Username, o.Password = aclUser, aclPass }

// Case 2: restart detection must not be switched off silently by a user
// that may not run INFO. Its grants are not counted, with an error naming
// INFO, unless detection is off; and the case-1 scenario cannot overlap for
// such a Client, although it talked to every master before the restarts.
func TestSafetyACLWithoutInfo(t *testing.T) {
	const key, ttl = "stock", 3 * time.Second
	l := safetyLab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	allowAllButInfo(t, ctx, l, 0, 1, 2, 3, 4)
	nodes := l.Clients(t, asLimited)
	if err := nodes[0].Info(ctx, "server").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("INFO as %s: err = %v, want NOPERM", aclUser, err)
	}
	b := newClient(t, nodes, redlock.WithTTL(ttl))

	_, err := b.TryLock(ctx, "fresh")
	votes := votesOf(t, err)
	requireVotes(t, votes, "failed with ErrStartUnknown naming INFO", func(v redlock.NodeVote) bool {
		return failedWith(redlock.ErrStartUnknown)(v) && strings.Contains(v.Err.Error(), "INFO")
	}, 3, 0, 1, 2, 3, 4)
	off, err := b.TryLock(ctx, "guard-off", redlock.WithRestartGuard(0))
	if err != nil {
		t.Fatalf("TryLock with WithRestartGuard(0) as %s: %v", aclUser, err)
	}
	if err := off.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}

	held := holdOnThreeOfFive(t, ctx, l, key, ttl)
	l.Restart(t, true, 3, 4, 2)
	requireNoState(t, ctx, l, key, 2, 3, 4)
	allowAllButInfo(t, ctx, l, 2, 3, 4) // the restarts dropped the user
	neverGranted(t, contend(t, ctx, b, held, key), 2, 3, 4)
}

// Case 3: one master restarted empty after a lease it granted expired,
// with a minority paused: the next holder's token must still be larger
// than the paused holder's, so that a fenced store refuses the latter's
// late writes.
func TestSafetyTokensGrowAfterOneEmptyRestart(t *testing.T) {
	const key, ttl = "ledger", time.Second
	opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithAutoRenew(false), redlock.WithRestartGuard(ttl)}
	l := safetyLab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	l.Kill(t, 3, 4)
	a := newClient(t, l.Clients(t, failFast), opts...)
	for i := range 5 {
		lk, err := a.TryLock(ctx, key)
		if err != nil {
			t.Fatalf("A: cycle %d: TryLock: %v", i, err)
		}
		if err := lk.Unlock(ctx); err != nil {
			t.Fatalf("A: cycle %d: Unlock: %v", i, err)
		}
	}
	sixth, err := a.TryLock(ctx, key) // A pauses holding it: no Unlock
	if err != nil {
		t.Fatalf("A: sixth TryLock: %v", err)
	}

	l.Restart(t, true, 3, 4)
	l.Kill(t, 2)
	down := time.Now()
	testkit.Eventually(t, 3*ttl, "master 2 down longer than the TTL, past A's validity", func() bool {
		return time.Since(down) > ttl && time.Now().After(sixth.Until())
	})
	l.Restart(t, true, 2)

	// Wait out the guard: B locks a probe key that masters 0, 1 refuse, so
	// that only masters 2, 3 and 4 — all restarted — can give a majority.
	nodes := l.Clients(t)
	b := newClient(t, nodes, opts...)
	probe := redlock.Keys(redlock.DefaultPrefix, "probe").Lock
	for _, n := range nodes[:2] {
		if err := n.HSet(ctx, probe, "owner", "someone else").Err(); err != nil {
			t.Fatalf("HSET: %v", err)
		}
	}
	p := eventuallyLocked(t, 4*ttl, "B locks the probe through masters 2, 3, 4 once past the guard", func() (*redlock.Lock, error) {
		return b.TryLock(ctx, "probe")
	})
	if err := p.Unlock(ctx); err != nil {
		t.Fatalf("B: Unlock probe: %v", err)
	}

	requireNoState(t, ctx, l, key, 2, 3, 4)
	l.Pause(t, 0, 1)
	next, err := b.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("B: TryLock through masters 2, 3, 4: %v", err)
	}
	if next.Token() <= sixth.Token() {
		t.Errorf("B's token = %d after paused A's %d, want larger", next.Token(), sixth.Token())
	}
}

// Case 4: every key works on Redis Cluster nodes — all of a key's names
// share one slot, whatever braces or escapes the key contains — distinct
// keys never share names, and keys that need no escape keep their names.
func TestSafetyKeysOnClusterNodes(t *testing.T) {
	keys := []string{"}x", "a}b{c", "{}", "%", "%7D", "plain"}
	l := redislab.StartCluster(t, 3)
	l.Trust(t, redlock.TrustStart)
	clusters := l.ClusterClients(t)
	c := newClient(t, clusters)
	ctx := ctxFor(t, 30*time.Second)
	for _, key := range keys {
		lk, err := c.TryLock(ctx, key)
		if err != nil {
			t.Errorf("key %q: TryLock: %v", key, err)
			continue
		}
		if err := lk.Extend(ctx); err != nil {
			t.Errorf("key %q: Extend: %v", key, err)
		}
		if err := lk.Unlock(ctx); err != nil {
			t.Errorf("key %q: Unlock: %v", key, err)
		}
	}

	// The escape is one-to-one: keys that differ only in their escapes.
	more := slices.Concat(keys, []string{"}", "%}", "%25", "%257D", "%%7D", "%7D%", "x}", "x%7D", "%x}", "{x}", "x"})
	owner := map[string]string{}
	for _, key := range more {
		kn := redlock.Keys(redlock.DefaultPrefix, key)
		if prev, ok := owner[kn.Lock]; ok {
			t.Errorf("keys %q and %q share the lock name %q", prev, key, kn.Lock)
		}
		owner[kn.Lock] = key
		plain := !strings.Contains(key, "}") && !strings.HasPrefix(key, "%")
		if old := redlock.DefaultPrefix + "{" + key + "}"; plain && kn.Lock != old {
			t.Errorf("key %q: lock name %q, want %q as before the escape (locks held across an upgrade)", key, kn.Lock, old)
		}
		want, err := clusters[0].ClusterKeySlot(ctx, kn.Lock).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		for _, name := range []string{kn.Fence, kn.Queue, kn.Leases, kn.Readers} {
			if got, err := clusters[0].ClusterKeySlot(ctx, name).Result(); err != nil || got != want {
				t.Errorf("key %q: slot of %q = %d, %v; want %d, the lock's", key, name, got, err, want)
			}
		}
	}
}

// Case 5: an acquisition that stalls after its votes are in, past the
// point where the validity left no longer holds the loss margin, fails
// instead of handing back a lock that would be signalled lost less than the
// margin before Until. The stall is the acquiring process's: the Client
// tells its observers of a failed node (master 2, down) after counting the
// votes and before checking the time, and this observer pauses there for
// 600 ms — of a 988 ms validity whose loss margin is 450 ms. The grants are
// slowed by 100 ms, so that the failure is in before the majority.
func TestSafetyAttemptLeavingLessThanLossMarginFails(t *testing.T) {
	const ttl, timeout, stall = time.Second, 450 * time.Millisecond, 600 * time.Millisecond
	l := safetyLab(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	l.Kill(t, 2)
	nodes := l.Clients(t, failFast)
	for i, n := range nodes {
		n.AddHook(slowScripts{delay: 100 * time.Millisecond})
		// A type the library cannot rebuild is used as it is, so that the
		// hook sees the library's commands.
		nodes[i] = asIs{n}
	}
	obs := &stallOnNodeFailure{stall: stall}
	c := newClient(t, nodes, redlock.WithTTL(ttl), redlock.WithNodeTimeout(timeout), redlock.WithAutoRenew(false),
		redlock.WithObserver(obs))
	lk, err := c.TryLock(ctx, "late")
	if !obs.stalled.Load() {
		t.Fatalf("the observer was not told of master 2's failure (TryLock: %v): no stall, the test proved nothing", err)
	}
	if err == nil {
		t.Fatalf("TryLock granted a lock with %v of validity left, want it refused: the loss margin is %v",
			time.Until(lk.Until()).Round(time.Millisecond), timeout)
	}
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) || !errors.Is(err, redlock.ErrNotObtained) || qe.Granted < qe.Need {
		t.Fatalf("TryLock error = %v, want ErrNotObtained with a granting majority (too late, not refused)", err)
	}
}

// stallOnNodeFailure pauses the first time it is told of a failed node:
// the acquiring process stalls there (a GC pause, a preempted thread).
type stallOnNodeFailure struct {
	redlock.NopObserver
	stall   time.Duration
	stalled atomic.Bool
}

func (o *stallOnNodeFailure) NodeFailed(_ context.Context, op, _ string, _ redlock.NodeVote) {
	if op == "lock" && o.stalled.CompareAndSwap(false, true) {
		time.Sleep(o.stall) // the fault injected, not a wait for a condition
	}
}

// asIs wraps a redis client in a type of the caller's own, which New uses as
// it is instead of building a client of its own from its options.
type asIs struct{ redis.UniversalClient }

// slowScripts delays every EVALSHA — a script call's first command, so
// that a NOSCRIPT retry by EVAL adds nothing — alone or in a pipeline.
type slowScripts struct{ delay time.Duration }

func (slowScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h slowScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.wait(ctx, []redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h slowScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.wait(ctx, cmds)
		return next(ctx, cmds)
	}
}

func (h slowScripts) wait(ctx context.Context, cmds []redis.Cmder) {
	if !slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return c.Name() == "evalsha" }) {
		return
	}
	t := time.NewTimer(h.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Case 5: a key may be as long as MaxKeyLen, but an error never carries it
// whole.
func TestSafetyLongKeyIsCutInErrors(t *testing.T) {
	c, _, _ := lab(t, 3)
	ctx := ctxFor(t, 10*time.Second)
	key := strings.Repeat("k", redlock.MaxKeyLen)
	held, err := c.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("TryLock of a MaxKeyLen key: %v", err)
	}
	_, err = c.TryLock(ctx, key)
	if !errors.Is(err, redlock.ErrNotObtained) || strings.Contains(err.Error(), key) || len(err.Error()) > redlock.MaxKeyLen/2 {
		t.Errorf("second TryLock: error (%d bytes) = %.300v…; want ErrNotObtained, without the key whole", len(err.Error()), err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := held.Extend(ctx); !errors.Is(err, redlock.ErrNotHeld) || strings.Contains(err.Error(), key) {
		t.Errorf("Extend after Unlock: error = %.300v…; want ErrNotHeld, without the key whole", err)
	}
}

// Case 6: a replica given beside its master is never counted. It is made
// writable — TrustStart refuses to vouch for it — and vouched for by hand,
// so that it would grant and be counted at once;
// with two masters down, its vote would complete the majority.
func TestSafetyReplicaNotCounted(t *testing.T) {
	l := safetyLab(t, 5)
	ctx := ctxFor(t, 30*time.Second)
	admin := l.Clients(t)
	replica := admin[4]
	host, port, err := net.SplitHostPort(l.Nodes[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	// Sync at once, not after the 5 s wait for more replicas.
	if err := admin[0].ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatalf("CONFIG SET repl-diskless-sync-delay 0: %v", err)
	}
	if err := replica.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "master_link_status:up on node 4", func() bool {
		return strings.Contains(replica.Info(ctx, "replication").Val(), "master_link_status:up")
	})
	if err := replica.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		t.Fatalf("CONFIG SET replica-read-only no: %v", err)
	}
	// TrustStart refuses a replica, writable or not; vouch by hand (the
	// sync replaced its vouch with master 0's).
	if err := redlock.TrustStart(ctx, replica); !errors.Is(err, redlock.ErrReplica) {
		t.Fatalf("TrustStart on a writable replica = %v, want ErrReplica", err)
	}
	runID := replica.InfoMap(ctx, "server").Item("Server", "run_id")
	if err := replica.Set(ctx, redlock.TrustKey, runID, time.Hour).Err(); err != nil {
		t.Fatalf("vouching for the replica by hand: %v", err)
	}

	c := newClient(t, l.Clients(t, failFast)) // the dead masters cost nothing
	l.Kill(t, 2, 3)
	lk, err := c.TryLock(ctx, "stock")
	if err == nil {
		t.Fatalf("TryLock obtained (token %d) the lock with masters 0, 1 and the replica of 0: the replica was counted", lk.Token())
	}
	requireVotes(t, votesOf(t, err), "failed with ErrReplica", failedWith(redlock.ErrReplica), 1, 4)
}

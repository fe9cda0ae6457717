package redlock

import (
	"sync"
	"time"
	"unsafe"

	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// Converting a string, or an integer past 255, to any allocates. The
// values every call of an acquisition repeats — its owner and hold, its
// durations, the names of its keys — are converted once (boxes), and each
// call's arguments are built from them: one slice per call, not one
// allocation per argument.

// boxes are an acquisition's values converted to any once, shared by
// every attempt and every call of the Lock it wins: the names of the keys
// kss and the prelude's values.
type boxes struct {
	kss      keysets       // the keys names holds, to tell a semaphore's permit apart
	names    [][6]any      // per key of kss: Lock, Fence, Queue, Leases, Readers, Channel
	owner    string        // the acquisition's owner,
	ownerArg any           // boxed
	dur      *durationArgs // its TTL, retention and queue lease
}

// durationArgs are the prelude's durations in milliseconds, boxed.
type durationArgs struct {
	ttl, retention, queueLease  time.Duration
	ttlMs, retentionMs, queueMs any
}

func newDurationArgs(cfg *config) *durationArgs {
	ttl, ret, q := cfg.ttl, cfg.retention, cfg.queueLease()
	return &durationArgs{ttl: ttl, retention: ret, queueLease: q,
		ttlMs: ttl.Milliseconds(), retentionMs: ret.Milliseconds(), queueMs: q.Milliseconds()}
}

// durations returns cfg's durations boxed: the Client's own when cfg has
// the Client's values, as it has unless options were given.
func (c *Client) durations(cfg *config) *durationArgs {
	d := c.durArgs.Load()
	if d == nil || d.ttl != cfg.ttl || d.retention != cfg.retention || d.queueLease != cfg.queueLease() {
		d = newDurationArgs(cfg)
		if cfg.ttl == c.cfg.ttl && cfg.retention == c.cfg.retention && cfg.queueLease() == c.cfg.queueLease() {
			c.durArgs.Store(d)
		}
	}
	return d
}

func newBoxes(c *Client, cfg *config, kss keysets, names [][6]any, owner string) *boxes {
	return &boxes{kss: kss, names: names, owner: owner, ownerArg: owner, dur: c.durations(cfg)}
}

// boxNames returns the names of kss boxed, in scriptKeys' order then the
// channel.
func boxNames(kss keysets) [][6]any {
	names := make([][6]any, len(kss))
	for i, k := range kss {
		names[i] = [6]any{k.Lock, k.Fence, k.Queue, k.Leases, k.Readers, k.Channel}
	}
	return names
}

// A keyCache keeps the names of the keys a Client locked last, and their
// boxes: a key locked again and again (a job's, a hot row's) costs them
// once. Entries are shared read-only. When full it starts over: a bound on
// memory, not a recency order.
type keyCache struct {
	mu sync.RWMutex
	m  map[[2]string]keyEntry // by prefix and key
}

type keyEntry struct {
	kss   keysets
	names [][6]any
}

// keyCacheSize bounds a Client's cache: about 400 bytes an entry.
const keyCacheSize = 1024

// keysOf returns the names of keys under prefix and their boxes; those of
// one key come from the cache.
func (kc *keyCache) keysOf(prefix string, keys []string) (keysets, [][6]any) {
	if len(keys) != 1 {
		kss := newKeysets(prefix, keys)
		return kss, boxNames(kss)
	}
	id := [2]string{prefix, keys[0]}
	kc.mu.RLock()
	e, ok := kc.m[id]
	kc.mu.RUnlock()
	if ok {
		return e.kss, e.names
	}
	kss := newKeysets(prefix, keys)
	e = keyEntry{kss: kss, names: boxNames(kss)}
	kc.mu.Lock()
	if kc.m == nil || len(kc.m) >= keyCacheSize {
		kc.m = make(map[[2]string]keyEntry, 64)
	}
	kc.m[id] = e
	kc.mu.Unlock()
	return e.kss, e.names
}

// keyNames returns the boxed names of a's keys, or nil when a acts on
// other keys than its boxes were made for (a semaphore's won permit).
func (a *acquisition) keyNames() [][6]any {
	b := a.box
	if b == nil || len(b.kss) != len(a.kss) || len(a.kss) == 0 || unsafe.SliceData(b.kss) != unsafe.SliceData(a.kss) {
		return nil
	}
	return b.names
}

// channelArg returns the channel of a's key i, boxed.
func (a *acquisition) channelArg(i int) any {
	if names := a.keyNames(); names != nil {
		return names[i][5]
	}
	return a.kss[i].Channel
}

// holderArgs returns the prelude's arguments (commonArgs) of a call by a's
// holder: its owner and hold and the fencing retention, and with lease
// its TTL, ticket and queue lease too (zero values otherwise).
func (a *acquisition) holderArgs(lease bool, ticket string) [argsCommon]any {
	if a.box == nil {
		var p [argsCommon]any
		ttl, q := time.Duration(0), time.Duration(0)
		if lease {
			ttl, q = a.cfg.ttl, a.cfg.queueLease()
		}
		copy(p[:], commonArgs(0, a.id.owner, a.id.hold, ttl, a.cfg.retention, ticket, q))
		return p
	}
	d, cfg := a.box.dur, &a.cfg
	if d.ttl != cfg.ttl || d.retention != cfg.retention || d.queueLease != cfg.queueLease() {
		d = newDurationArgs(cfg)
	}
	// The boxes serve while they are of a's identity (a Campaign gives
	// its acquisition an owner of its own).
	owner, hold := a.box.ownerArg, a.holdArg
	if a.box.owner != a.id.owner {
		owner = a.id.owner
	}
	if hold == nil || a.holdText != a.id.hold {
		hold = a.id.hold
	}
	p := [argsCommon]any{argOwner: owner, argHold: hold, argTTL: int64(0), argRetention: d.retentionMs,
		argRestart: master.RestartOff, argTicket: "", argQueueLease: int64(0)}
	if lease {
		p[argTTL], p[argQueueLease] = d.ttlMs, d.queueMs
		if ticket != "" {
			p[argTicket] = ticket
		}
	}
	return p
}

// newCall returns script s's call on a's keys — the first per names of
// each, as scriptKeys — with the prelude's arguments pre, and room for
// extra arguments more (appended by the caller to sc.evalsha).
func (a *acquisition) newCall(s *script, per int, pre *[argsCommon]any, extra int) *scriptCall {
	names := a.keyNames()
	if names == nil {
		return newScriptCall(s, a.kss.scriptKeys(per), pre[:]...)
	}
	n := per * len(names)
	args := make([]any, 0, 3+n+argsCommon+extra)
	args = append(args, "evalsha", shaArg(s), n)
	for i := range names {
		args = append(args, names[i][:per]...)
	}
	return &scriptCall{s: s, evalsha: append(args, pre[:]...)}
}

// shaArgs are each script's SHA1, boxed once.
var shaArgs sync.Map // *script → any

func shaArg(s *script) any {
	if v, ok := shaArgs.Load(s); ok {
		return v
	}
	v, _ := shaArgs.LoadOrStore(s, any(s.sha))
	return v
}

// savedArg is a node's restart argument (prelude.lua: restart) boxed, kept
// while it is unchanged.
type savedArg struct {
	text string
	box  any
}

// restartArg returns text boxed, reusing the box of the last call while
// text is the same.
func (nd *node) restartArg(text string) any {
	if p := nd.saved.Load(); p != nil && p.text == text {
		return p.box
	}
	p := &savedArg{text: text, box: text}
	nd.saved.Store(p)
	return p.box
}

// startArgs returns master.Node.StartKeys(lock) boxed: those of a plain master or
// a Sentinel member are the same for every lock, boxed once.
func (nd *node) startArgs(lock string) []any {
	switch {
	case nd.master.Failover():
		return failoverStartArgs
	case !nd.master.Cluster():
		return plainStartArgs
	}
	keys := nd.master.StartKeys(lock)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

var (
	plainStartArgs    = []any{TrustKey}
	failoverStartArgs = []any{TrustKey, master.MasterOwnerKey}
)

// perNode returns an attempt's call base for each node: with restart
// detection on, base's last argument becomes the node's LASTSAVE as this
// Client last saw it, and the start records of the attempt's slot are
// declared. The calls and their arguments share two allocations.
func (a *acquisition) perNode(base *scriptCall) []scriptCall {
	calls := make([]scriptCall, len(a.c.nodes))
	if !a.cfg.detectRestarts() {
		for n := range calls {
			calls[n] = *base
		}
		return calls
	}
	// Under the default guard, while a node is young every node reports the
	// TTL record of the keys (master.RestartRecord): the young node's grant counts
	// by them.
	record := ""
	if a.cfg.defaultGuard() && a.c.anyYoung(a.cfg.ttl, a.cfg.clock.Now()) {
		record = master.RestartRecord
	}
	lock := a.kss[0].Lock
	per := len(base.evalsha) + 2 // room for two start records
	buf := make([]any, per*len(calls))
	for n, node := range a.c.nodes {
		start := node.startArgs(lock)
		node.withStartCall(&calls[n], base, buf[n*per:n*per:(n+1)*per], record, start)
	}
	return calls
}

// withStartCall writes into sc base with node's restart argument (record
// before it) and its start records start, its arguments in buf.
func (nd *node) withStartCall(sc, base *scriptCall, buf []any, record string, start []any) {
	var last any
	if record == "" {
		last = nd.restartArg(nd.master.LastSaved())
	} else {
		last = record + nd.master.LastSaved()
	}
	base.withStart(sc, buf, last, start)
}

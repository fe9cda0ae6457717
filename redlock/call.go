package redlock

import (
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// A scriptCall is one invocation of a script — its keys and arguments boxed
// once, and shared read-only by the calls to every node — instead of once
// per node, as redis.Script.Run would.
type scriptCall struct {
	s       *script
	evalsha []any // "evalsha", sha1, numkeys, keys..., args...
}

func newScriptCall(s *script, keys []string, args ...any) *scriptCall {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", s.sha, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return &scriptCall{s: s, evalsha: append(a, args...)}
}

// withStart returns a copy of sc whose restart argument is last (prelude.lua:
// restart) and whose last KEYS are start, the records start_info reads
// (master.Node.StartKeys), written into into (nil: a new one) with its
// arguments in buf when it has room.
func (sc *scriptCall) withStart(into *scriptCall, buf []any, last any, start []any) *scriptCall {
	keys := sc.evalsha[2].(int)
	a := buf[:0]
	if cap(a) < len(sc.evalsha)+len(start) {
		a = make([]any, 0, len(sc.evalsha)+len(start))
	}
	a = append(a, sc.evalsha[:3+keys]...)
	a = append(a, start...)
	a = append(a, sc.evalsha[3+keys:]...)
	a[2] = keys + len(start)
	a[3+keys+len(start)+argRestart] = last
	if into == nil {
		into = new(scriptCall)
	}
	*into = scriptCall{s: sc.s, evalsha: a}
	return into
}

// execAlone runs sc on node n outside any round — a late answer's follow-up
// — under one node timeout of its own, and returns its error.
func (c *Client) execAlone(ctx context.Context, n int, sc *scriptCall) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.nodeTimeout)
	defer cancel()
	return c.exec(ctx, n, sc).Err()
}

// exec runs sc on node n. Until n is known to be no other member's
// cluster, its node IDs are read beside the call, and the reply counts
// only once they clear it (firstContact); a refused member's calls fail.
func (c *Client) exec(ctx context.Context, n int, sc *scriptCall) *redis.Cmd {
	key, _ := master.RouteKey(sc.evalsha)
	first, err := c.firstContact(n, key)
	if err == nil {
		cmd := c.send(ctx, n, sc)
		if first == nil || cmd.Err() != nil {
			return cmd
		}
		if err = first.Admitted(ctx, c.ids, n); err == nil {
			return cmd
		}
	}
	cmd := redis.NewCmd(ctx, sc.evalsha...)
	cmd.SetErr(err)
	return cmd
}

// firstContact returns nil, nil once member n is known to be no other
// member's cluster (master.MemberIDs), and its ErrSameCluster error once
// refused. Before that, it returns the read of n's IDs in flight, started
// now if none is: the caller sends its call beside it, then counts the
// reply only if Admitted says so. On a cluster member the read goes to
// the primary owning key's slot (a call's first key; "" in New).
func (c *Client) firstContact(n int, key string) (*master.IDRead, error) {
	r, start, err := c.ids.Contact(n)
	if start {
		c.wg.Add(1) // in New, or inside the caller's counted call: never while Close waits
		go c.readIDs(n, key, r)
	}
	return r, err
}

// readIDs reads member n's node IDs under a budget of its own — that of
// the background connection set-up, so that a slow handshake still ends
// in a read — and files them; Close cuts it short.
func (c *Client) readIDs(n int, key string, r *master.IDRead) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 4*master.SocketBound(c.cfg.nodeTimeout))
	defer cancel()
	var ids map[string]bool
	var err error
	read := make(chan struct{})
	go func() {
		defer close(read)
		ids, err = c.nodes[n].master.ReadIDs(ctx, key)
	}()
	select {
	case <-read:
	case <-c.done:
		cancel()
		<-read
	}
	c.ids.Filed(n, r, ids, err)
}

// send runs sc on node n. A node that does not have the script cached (it
// restarted, or its cache was flushed) gets it by EVAL, under a budget of its
// own: ctx may be spent by then, and a command under a spent ctx is silently
// never sent.
func (c *Client) send(ctx context.Context, n int, sc *scriptCall) *redis.Cmd {
	nd := c.nodes[n]
	cmd := nd.master.Call(ctx, sc.evalsha...)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.nodeTimeout)
		defer cancel()
		eval := slices.Clone(sc.evalsha)
		eval[0], eval[1] = "eval", sc.s.src
		cmd = nd.master.Call(ctx, eval...)
	}
	if err := cmd.Err(); err != nil {
		cmd.SetErr(explainSetup(sc.s.explain(err)))
	}
	return cmd
}

// The prelude's arguments (prelude.lua), the first of every script, by
// index from 0.
const (
	argOwner = iota
	argHold
	argTTL
	argRetention
	argRestart
	argTicket
	argQueueLease
	argsCommon // the script's own arguments follow
)

// commonArgs returns the prelude's arguments, with room for extra more.
// Zero values stand for those a script does not use.
func commonArgs(extra int, owner, hold string, ttl, retention time.Duration, ticket string, queueLease time.Duration) []any {
	a := make([]any, argsCommon, argsCommon+extra)
	a[argOwner], a[argHold], a[argTTL], a[argRetention] = owner, hold, ttl.Milliseconds(), retention.Milliseconds()
	a[argRestart], a[argTicket], a[argQueueLease] = master.RestartOff, ticket, queueLease.Milliseconds()
	return a
}

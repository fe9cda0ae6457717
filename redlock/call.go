package redlock

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"
)

// A scriptCall is one invocation of a script — its keys and arguments boxed
// once, and shared read-only by the calls to every node — instead of once
// per node, as redis.Script.Run would.
type scriptCall struct {
	src     string
	evalsha []any // "evalsha", sha1, numkeys, keys..., args...
}

func newScriptCall(s *script, keys []string, args ...any) *scriptCall {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", s.sha, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return &scriptCall{src: s.src, evalsha: append(a, args...)}
}

// withStart returns a copy of sc whose last argument is last (restart
// detection, start.lua) and whose last KEYS are start, the records
// start.lua reads (node.startKeys).
func (sc *scriptCall) withStart(last string, start []string) *scriptCall {
	keys := sc.evalsha[2].(int)
	a := make([]any, 0, len(sc.evalsha)+len(start))
	a = append(a, sc.evalsha[:3+keys]...)
	for _, k := range start {
		a = append(a, k)
	}
	a = append(a, sc.evalsha[3+keys:]...)
	a[2], a[len(a)-1] = keys+len(start), last
	return &scriptCall{src: sc.src, evalsha: a}
}

// execAlone runs sc on node n outside any round — a late answer's follow-up
// — under one node timeout of its own.
func (c *Client) execAlone(ctx context.Context, n int, sc *scriptCall) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.nodeTimeout)
	defer cancel()
	c.exec(ctx, n, sc)
}

// exec runs sc on node n. A node that does not have the script cached (it
// restarted, or its cache was flushed) gets it by EVAL, under a budget of its
// own: ctx may be spent by then, and a command under a spent ctx is silently
// never sent.
func (c *Client) exec(ctx context.Context, n int, sc *scriptCall) *redis.Cmd {
	nd := c.nodes[n]
	cmd := nd.do(ctx, sc.evalsha...)
	if err := cmd.Err(); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return cmd
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.nodeTimeout)
	defer cancel()
	eval := slices.Clone(sc.evalsha)
	eval[0], eval[1] = "eval", sc.src
	return nd.do(ctx, eval...)
}

package master

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/autopipe"
)

// shardRoutes are the routes of a cluster member, one per primary: a call
// goes to the primary owning its keys' slot in the member's slot map, and
// is batched with the calls to that primary only — so a shard that is
// slow, paused, restarting or dead delays its own keys' calls, never
// those of the member's other shards. (One go-redis cluster pipeline per
// member would split every batch by node and wait for all of them.)
//
// The slot map is the member's dedicated ClusterClient's (MasterForKey), which
// reloads it on its own schedule and whenever a call here meets MOVED or
// a primary that cannot be reached. Each route has its own client to its
// primary, built like the cluster's node clients (dedicatedServerClient), so
// that the ClusterClient's own clean-ups never close a client under a call.
type shardRoutes struct {
	cc          *redis.ClusterClient // the member's dedicated client: the slot map
	nodeTimeout time.Duration

	mu     sync.Mutex
	tmpl   *redis.Options    // a node client's options: every route's client is built from them
	routes map[string]*route // by primary address
	closed bool              // cut or closed: no new route
}

// routeIdle is how long a route may go unused before it is dropped, the
// next time a new primary is met (the slot map changed): a primary that
// lost its slots, or left, keeps no pipe and no client.
const routeIdle = time.Minute

func newShardRoutes(cc *redis.ClusterClient, nodeTimeout time.Duration) *shardRoutes {
	return &shardRoutes{cc: cc, nodeTimeout: nodeTimeout, routes: map[string]*route{}}
}

// call sends a script call (args as for EVALSHA or EVAL, keys in one slot) to
// the primary owning its keys, and follows a redirect once (follow).
func (s *shardRoutes) call(ctx context.Context, late time.Duration, args []any) *redis.Cmd {
	key, ok := RouteKey(args)
	if !ok {
		return failedCmd(ctx, args, errors.New("redlock: a call to a cluster member names no key"))
	}
	r, err := s.primaryFor(ctx, key)
	if err != nil {
		return failedCmd(ctx, args, err)
	}
	cmd := r.call(ctx, late, false, args)
	if errors.Is(cmd.Err(), autopipe.ErrClosed) {
		// Dropped as idle between primaryFor and call (nothing was sent): once
		// more, on a route of its own.
		if r, err = s.primaryFor(ctx, key); err != nil {
			return failedCmd(ctx, args, err)
		}
		cmd = r.call(ctx, late, false, args)
	}
	return s.follow(ctx, late, args, cmd)
}

// follow handles cmd's outcome. A MOVED reply — the slot has a new primary —
// reloads the slot map and sends the call once more, to the primary the
// reply names; an ASK reply — the slot is being migrated and its keys are
// not here — sends it once more to the importing node, after ASKING on the
// same connection. Neither reply says anything of the lock: the call
// counts only by the reply of the server that ran it, and a second
// redirect, TRYAGAIN (a slot's keys split by a migration) or CLUSTERDOWN
// is an error, so a failed vote. A primary that cannot be reached may
// have been replaced by its replica: the slot map is reloaded for the
// next call.
func (s *shardRoutes) follow(ctx context.Context, late time.Duration, args []any, cmd *redis.Cmd) *redis.Cmd {
	err := cmd.Err()
	if err == nil {
		return cmd
	}
	moved, ask, addr := redirect(err)
	if !moved && !ask {
		if !IsReply(err) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, autopipe.ErrClosed) {
			s.cc.ReloadState(ctx)
		}
		return cmd
	}
	if moved {
		s.cc.ReloadState(ctx)
	}
	to, err := s.at(addr, nil)
	if err != nil {
		return cmd
	}
	return to.call(ctx, late, ask, args)
}

// primaryFor returns the route to the primary owning key's slot in the slot
// map (loaded at the first call, under ctx).
func (s *shardRoutes) primaryFor(ctx context.Context, key string) (*route, error) {
	nc, err := s.cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, err
	}
	o := nc.Options()
	return s.at(o.Addr, o)
}

// primaryAddr returns the address of the primary owning key's slot in the
// slot map, or "" if the map cannot be loaded within timeout.
func (s *shardRoutes) primaryAddr(key string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, err := s.cc.MasterForKey(ctx, key)
	if err != nil {
		return ""
	}
	return nc.Options().Addr
}

// at returns the route to the primary at addr, made with tmpl's settings
// (else those of an earlier node client) if there is none yet.
func (s *shardRoutes) at(addr string, tmpl *redis.Options) (*route, error) {
	now := time.Now()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if r := s.routes[addr]; r != nil {
		r.used.Store(now.UnixNano())
		s.mu.Unlock()
		return r, nil
	}
	if s.tmpl == nil {
		s.tmpl = tmpl
	}
	if s.tmpl == nil {
		s.mu.Unlock()
		return nil, errors.New("redlock: a redirect before the slot map was loaded")
	}
	o := *s.tmpl
	o.Addr = addr
	rdb := dedicatedServerClient(o, SocketBound(s.nodeTimeout))
	r := newRoute(rdb, true, s.nodeTimeout, LateWindow(s.nodeTimeout))
	r.used.Store(now.UnixNano())
	idle := s.dropIdle(now)
	s.routes[addr] = r
	s.mu.Unlock()
	for _, old := range idle {
		old.close()
	}
	return r, nil
}

// dropIdle removes the routes unused for routeIdle and returns them, to be
// closed outside s.mu. s.mu held.
func (s *shardRoutes) dropIdle(now time.Time) []*route {
	var idle []*route
	for addr, r := range s.routes {
		if now.Sub(time.Unix(0, r.used.Load())) >= routeIdle {
			idle = append(idle, r)
			delete(s.routes, addr)
		}
	}
	return idle
}

// stop refuses new routes and returns the existing ones.
func (s *shardRoutes) stop() []*route {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	out := make([]*route, 0, len(s.routes))
	for _, r := range s.routes {
		out = append(out, r)
	}
	return out
}

// cut drops every route's connections at once (Node.Cut).
func (s *shardRoutes) cut() {
	for _, r := range s.stop() {
		r.cut()
	}
}

// close closes every route (Node.Close).
func (s *shardRoutes) close() {
	for _, r := range s.stop() {
		r.close()
	}
}

// RouteKey returns the first key of a script call's args ("evalsha" or
// "eval", script, numkeys, keys…): every key of one call shares its slot.
func RouteKey(args []any) (string, bool) {
	if len(args) < 4 {
		return "", false
	}
	if n, ok := args[2].(int); !ok || n < 1 {
		return "", false
	}
	key, ok := args[3].(string)
	return key, ok
}

// redirect parses a Redis Cluster redirect reply, "MOVED <slot> <host:port>"
// or "ASK <slot> <host:port>", into its kind and address.
func redirect(err error) (moved, ask bool, addr string) {
	if !IsReply(err) {
		return false, false, ""
	}
	f := strings.Fields(err.Error())
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return false, false, ""
	}
	i := strings.LastIndexByte(f[2], ':')
	if i <= 0 { // no address, or an unknown endpoint (":port")
		return false, false, ""
	}
	addr = net.JoinHostPort(strings.Trim(f[2][:i], "[]"), f[2][i+1:])
	return f[0] == "MOVED", f[0] == "ASK", addr
}

// failedCmd is a call that was never sent, failed with err.
func failedCmd(ctx context.Context, args []any, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetErr(err)
	return cmd
}

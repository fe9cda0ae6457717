package redislab

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// join forms the member's cluster: distinct config epochs, each primary's
// slots, one MEET per node, each replica attached to its primary; it
// returns once every node reports cluster_state:ok and every replica's link
// is up.
func (m *Member) join(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	nodes := m.Nodes()
	for i, n := range nodes {
		// Before MEET: distinct epochs, so that no collision has to be
		// resolved later, which can hold a TAKEOVER up for seconds.
		if err := n.do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1); err != nil {
			return err
		}
	}
	for _, s := range m.Shards {
		if err := s.primary.do(ctx, "CLUSTER", "ADDSLOTSRANGE", s.First, s.Last); err != nil {
			return err
		}
	}
	for _, n := range nodes[1:] {
		if err := nodes[0].do(ctx, "CLUSTER", "MEET", "127.0.0.1", n.local.port, n.busPort()); err != nil {
			return err
		}
	}
	if err := waitFor(ctx, "every node knows the others", func() (bool, error) { return m.everyoneKnows(ctx, len(nodes)) }); err != nil {
		return err
	}
	for _, s := range m.Shards {
		if s.replica == nil {
			continue
		}
		id, err := s.primary.ID(ctx)
		if err != nil {
			return err
		}
		if err := s.replica.do(ctx, "CLUSTER", "REPLICATE", id); err != nil {
			return err
		}
	}
	return m.serving(ctx)
}

// Settled waits, up to 15 s, until every running node of m reports
// cluster_state:ok and every running replica's link to its primary is up:
// a member ready for MoveSlot or CutReplica after a restart. A paused node
// holds it up until it resumes or the wait ends.
func (m *Member) Settled(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	return m.settled(ctx)
}

// settled waits until every running node of m reports cluster_state:ok and
// every running replica's link to its primary is up.
func (m *Member) settled(ctx context.Context) error {
	return waitFor(ctx, "cluster_state:ok everywhere and every replica linked", func() (bool, error) {
		for _, s := range m.Shards {
			for _, n := range []*Node{s.Primary(), s.Replica()} {
				if n == nil || !n.running() {
					continue
				}
				if ok, err := n.infoHas(ctx, "cluster_state:ok", "CLUSTER", "INFO"); !ok || err != nil {
					return false, err
				}
				if n == s.Replica() {
					if ok, err := n.infoHas(ctx, "master_link_status:up", "INFO", "replication"); !ok || err != nil {
						return false, err
					}
				}
			}
		}
		return true, nil
	})
}

// serving waits until a member just formed serves every slot the same way
// from every node: settled, and besides each node sees the same slot map
// (the primary of every range) with every slot assigned and counts every
// slot of a running primary as served (cluster_slots_ok). cluster_state:ok
// alone is not enough: without full coverage required, a node reports it
// before gossip told it the other primaries' slots, and answers CLUSTERDOWN
// Hash slot not served for them (as does a client that loaded its slot map
// from it).
func (m *Member) serving(ctx context.Context) error {
	var why string // what the last probe found unsettled, for the error
	err := waitFor(ctx, "every node serves the same slot map and every replica is linked", func() (bool, error) {
		var first, firstAddr string
		for _, s := range m.Shards {
			for _, n := range []*Node{s.Primary(), s.Replica()} {
				if n == nil || !n.running() {
					continue
				}
				view, unsettled, err := m.view(ctx, n)
				if err != nil || unsettled != "" {
					why = n.Addr() + ": " + unsettled
					return false, err
				}
				if first == "" {
					first, firstAddr = view, n.Addr()
				} else if view != first {
					why = fmt.Sprintf("%s maps the slots as [%s], %s as [%s]", n.Addr(), view, firstAddr, first)
					return false, nil
				}
				if n == s.Replica() {
					if ok, err := n.infoHas(ctx, "master_link_status:up", "INFO", "replication"); !ok || err != nil {
						why = n.Addr() + ": replica link not up"
						return false, err
					}
				}
			}
		}
		return true, nil
	})
	if err != nil && why != "" {
		return fmt.Errorf("%w; last seen: %s", err, why)
	}
	return err
}

// view returns n's slot map, one "first-last owner-port" range after
// another in slot order (CLUSTER NODES), or why n does not serve it yet: it
// does not report cluster_state:ok, its map leaves a slot unassigned, or
// it does not count as served every slot of a running primary of m.
// Owners are told apart by port (every node of a lab is on one host): a
// node that never met another does not know its own IP.
func (m *Member) view(ctx context.Context, n *Node) (view, unsettled string, err error) {
	info, err := n.text(ctx, "CLUSTER", "INFO")
	if err != nil {
		return "", "", err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return "", "no cluster_state:ok", nil
	}
	nodes, err := n.text(ctx, "CLUSTER", "NODES")
	if err != nil {
		return "", "", err
	}
	var ranges []string
	assigned, served := 0, 0
	for line := range strings.Lines(nodes) {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		_, port, _ := net.SplitHostPort(addr)
		for _, r := range f[8:] { // "first-last" or "slot"; "[...]" is a slot on the move
			if strings.HasPrefix(r, "[") {
				continue
			}
			a, b, ok := strings.Cut(r, "-")
			if !ok {
				b = a
			}
			first, err1 := strconv.Atoi(a)
			last, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil {
				return "", "", fmt.Errorf("redislab: CLUSTER NODES on %s: slots %q", n.Addr(), r)
			}
			ranges = append(ranges, fmt.Sprintf("%05d-%05d %s", first, last, port))
			assigned += last - first + 1
			if o := m.nodeOnPort(port); o != nil && o.running() {
				served += last - first + 1
			}
		}
	}
	slices.Sort(ranges)
	view = strings.Join(ranges, ", ")
	switch {
	case assigned != lastSlot+1:
		return "", fmt.Sprintf("%d slots assigned in [%s]", assigned, view), nil
	case !strings.Contains(info, fmt.Sprintf("cluster_slots_ok:%d\r\n", served)):
		return "", fmt.Sprintf("cluster_slots_ok is not the %d slots of running primaries in [%s]", served, view), nil
	}
	return view, "", nil
}

// nodeOnPort returns the node of m on port, nil if none.
func (m *Member) nodeOnPort(port string) *Node {
	for _, n := range m.Nodes() {
		if _, p, _ := net.SplitHostPort(n.Addr()); p == port {
			return n
		}
	}
	return nil
}

// everyoneKnows reports whether every node lists total nodes, none of them
// still in handshake.
func (m *Member) everyoneKnows(ctx context.Context, total int) (bool, error) {
	for _, n := range m.Nodes() {
		out, err := n.text(ctx, "CLUSTER", "NODES")
		if err != nil {
			return false, err
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != total || strings.Contains(out, "handshake") || strings.Contains(out, "noaddr") {
			return false, nil
		}
	}
	return true, nil
}

// waitFor polls cond until it holds, it fails, or ctx ends.
func waitFor(ctx context.Context, what string, cond func() (bool, error)) error {
	var last error
	for {
		ok, err := cond()
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redislab: waiting until %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// do sends one command to the node alone, bounded by ctx.
func (n *Node) do(ctx context.Context, args ...any) error {
	_, err := n.text(ctx, args...)
	return err
}

// text sends one command to the node alone and returns its reply as text.
func (n *Node) text(ctx context.Context, args ...any) (string, error) {
	c := n.client()
	defer c.Close()
	cmd := c.Do(ctx, args...)
	if err := cmd.Err(); err != nil && err != redis.Nil {
		return "", fmt.Errorf("redislab: %v on %s: %w", args, n.addr, err)
	}
	return fmt.Sprint(cmd.Val()), nil
}

// infoHas reports whether the text reply of args contains want.
func (n *Node) infoHas(ctx context.Context, want string, args ...any) (bool, error) {
	out, err := n.text(ctx, args...)
	return strings.Contains(out, want), err
}

// running reports whether the node's process is up (not killed; it may be
// paused).
func (n *Node) running() bool {
	n.local.mu.Lock()
	defer n.local.mu.Unlock()
	return n.local.proc != nil
}

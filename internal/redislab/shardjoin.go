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
	return m.settled(ctx)
}

// Settled waits, up to 15 s, until the member serves (see settled): a
// member ready for MoveSlot or CutReplica after a restart. A paused node
// holds it up until it resumes or the wait ends.
func (m *Member) Settled(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	return m.settled(ctx)
}

// settled waits until the member serves every slot the same way from every
// running node: each reports cluster_state:ok, each sees the same slot map
// (the primary of every range, CLUSTER SHARDS) with every slot assigned,
// each counts as served (cluster_slots_ok) every slot whose primary runs,
// and every running replica's link to its primary is up.
//
// cluster_state:ok alone is not enough: without full coverage required, a
// node reports it before gossip told it the other primaries' slots, and
// answers CLUSTERDOWN Hash slot not served for them (as does a client that
// loaded its slot map from it).
func (m *Member) settled(ctx context.Context) error {
	return waitFor(ctx, "every node serves the same slot map and every replica is linked", func() (bool, error) {
		var first string
		for _, s := range m.Shards {
			for _, n := range []*Node{s.Primary(), s.Replica()} {
				if n == nil || !n.running() {
					continue
				}
				view, err := m.view(ctx, n)
				if view == "" || err != nil {
					return false, err
				}
				if first == "" {
					first = view
				} else if view != first {
					return false, nil
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

// view returns n's slot map, one "first-last owner-port" line per range in
// slot order, if n reports cluster_state:ok, the map assigns every slot,
// and n counts as served every slot of a running primary of m; else "".
// Owners are told apart by port (every node of a lab is on one host): a
// node that never met another does not know its own IP.
func (m *Member) view(ctx context.Context, n *Node) (string, error) {
	info, err := n.text(ctx, "CLUSTER", "INFO")
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		return "", err
	}
	c := n.client()
	defer c.Close()
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("redislab: CLUSTER SHARDS on %s: %w", n.Addr(), err)
	}
	var ranges []string
	assigned, served := 0, 0
	for _, sh := range shards {
		port := shardPrimaryPort(sh)
		for _, r := range sh.Slots {
			ranges = append(ranges, fmt.Sprintf("%05d-%05d %d", r.Start, r.End, port))
			assigned += int(r.End - r.Start + 1)
			if o := m.nodeOnPort(port); o != nil && o.running() {
				served += int(r.End - r.Start + 1)
			}
		}
	}
	if assigned != lastSlot+1 || !strings.Contains(info, fmt.Sprintf("cluster_slots_ok:%d\r\n", served)) {
		return "", nil
	}
	slices.Sort(ranges)
	return strings.Join(ranges, "\n"), nil
}

// shardPrimaryPort returns the port of the primary of a CLUSTER SHARDS
// entry, 0 if it lists none.
func shardPrimaryPort(sh redis.ClusterShard) int64 {
	for _, nd := range sh.Nodes {
		if nd.Role == "master" {
			return nd.Port
		}
	}
	return 0
}

// nodeOnPort returns the node of m on port, nil if none.
func (m *Member) nodeOnPort(port int64) *Node {
	for _, n := range m.Nodes() {
		if _, p, _ := net.SplitHostPort(n.Addr()); p == strconv.FormatInt(port, 10) {
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

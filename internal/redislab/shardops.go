package redislab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

var errNoReplica = errors.New("redislab: the shard has no replica (StartShards without WithReplicas)")

// CutReplica makes the shard's replica miss every write from now on until
// Failover: it pauses the replica (SIGSTOP), then closes the primary's
// replication links (CLIENT KILL TYPE replica). A pause alone is not enough:
// the replica would read what its socket buffered once resumed. Failover
// resumes it; so does Resume, after which it resyncs and the cut is undone
// (but a Failover then still promotes it without waiting for it).
func (s *Shard) CutReplica(ctx context.Context) error {
	primary, replica := s.Primary(), s.Replica()
	if replica == nil {
		return errNoReplica
	}
	s.mu.Lock()
	s.cut = true
	s.mu.Unlock()
	if err := replica.Pause(); err != nil {
		return err
	}
	return primary.do(ctx, "CLIENT", "KILL", "TYPE", "replica")
}

// Failover promotes the shard's replica with CLUSTER FAILOVER TAKEOVER —
// no agreement from the primary or the other primaries — and swaps
// Primary and Replica. A replica cut off by CutReplica is promoted without
// what it missed: the old primary, if running, is paused until the
// promotion is done, so that the replica cannot resync first, then resumed;
// it learns the new epoch and turns into a replica of the promoted node
// (dropping its keys in the full sync). A replica that was not cut is
// promoted with every write: Failover first waits until it has caught up
// with what the running primary had written (replication is asynchronous:
// a write just acknowledged by the primary may not have reached it yet).
// Failover returns once the promoted node is a primary, the other primaries
// route the shard's first slot to it, and the member has settled (see
// Settled).
func (s *Shard) Failover(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	old, promoted := s.Primary(), s.Replica()
	if promoted == nil {
		return errNoReplica
	}
	s.mu.Lock()
	cut := s.cut
	s.mu.Unlock()
	if !cut && old.running() {
		if err := caughtUp(ctx, old, promoted); err != nil {
			return err
		}
	}
	if old.running() {
		if err := old.Pause(); err != nil {
			return err
		}
		defer old.Resume() // error-free for a running process; checked by settled below
	}
	if err := promoted.Resume(); err != nil { // a no-op unless CutReplica paused it
		return err
	}
	if err := promoted.do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER"); err != nil {
		return err
	}
	if err := waitFor(ctx, "the replica is a primary", func() (bool, error) {
		return promoted.infoHas(ctx, "role:master", "INFO", "replication")
	}); err != nil {
		return err
	}
	if err := old.Resume(); err != nil && old.running() {
		return err
	}
	s.mu.Lock()
	s.primary, s.replica, s.cut = promoted, old, false
	s.mu.Unlock()
	if err := s.member.routed(ctx, s.First, promoted); err != nil {
		return err
	}
	return s.member.settled(ctx)
}

// caughtUp waits until replica has processed every write primary had made
// when called: its slave_repl_offset reaches the primary's
// master_repl_offset.
func caughtUp(ctx context.Context, primary, replica *Node) error {
	want, err := primary.replOffset(ctx, "master_repl_offset")
	if err != nil {
		return err
	}
	return waitFor(ctx, fmt.Sprintf("%s has replicated offset %d of %s", replica.Addr(), want, primary.Addr()), func() (bool, error) {
		got, err := replica.replOffset(ctx, "slave_repl_offset")
		return got >= want, err
	})
}

// replOffset returns the offset named field of n's INFO replication.
func (n *Node) replOffset(ctx context.Context, field string) (int64, error) {
	info, err := n.text(ctx, "INFO", "replication")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("redislab: no %s in INFO replication of %s", field, n.Addr())
}

// MoveSlot moves one hash slot, with its keys, from the shard that serves
// it to shard to, as redis-cli --cluster reshard does: IMPORTING on the
// target, MIGRATING on the source, MIGRATE of every key, then SETSLOT NODE
// on both and on every other primary. Keys written to the slot meanwhile
// are answered with ASK by the source once it lacks them. It returns once
// every primary routes the slot to its new owner.
func (m *Member) MoveSlot(ctx context.Context, slot int, to *Shard) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	src, err := m.Owner(ctx, slot)
	if err != nil {
		return err
	}
	dst := to.Primary()
	if src == dst {
		return nil
	}
	srcID, err := src.ID(ctx)
	if err != nil {
		return err
	}
	dstID, err := dst.ID(ctx)
	if err != nil {
		return err
	}
	if err := dst.do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID); err != nil {
		return err
	}
	if err := src.do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID); err != nil {
		return err
	}
	if err := migrateKeys(ctx, src, dst, slot); err != nil {
		return err
	}
	for _, n := range append([]*Node{dst, src}, m.primaries()...) {
		if err := n.do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID); err != nil {
			return err
		}
	}
	return m.routed(ctx, slot, dst)
}

// migrateKeys moves every key of slot from src to dst, in batches.
func migrateKeys(ctx context.Context, src, dst *Node, slot int) error {
	c := src.client()
	defer c.Close()
	for {
		keys, err := c.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil || len(keys) == 0 {
			return err
		}
		host, port, _ := strings.Cut(dst.Addr(), ":")
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := c.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("redislab: MIGRATE of slot %d from %s: %w", slot, src.Addr(), err)
		}
	}
}

// Owner returns the primary that serves slot, as the member's first
// running primary sees it (CLUSTER SLOTS).
func (m *Member) Owner(ctx context.Context, slot int) (*Node, error) {
	for _, n := range m.primaries() {
		if !n.running() {
			continue
		}
		addr, err := n.slotOwner(ctx, slot)
		if err != nil {
			return nil, err
		}
		for _, o := range m.Nodes() {
			if o.Addr() == addr {
				return o, nil
			}
		}
		return nil, fmt.Errorf("redislab: %s routes slot %d to %q, no node of the member", n.Addr(), slot, addr)
	}
	return nil, fmt.Errorf("redislab: no primary of the member is running")
}

// routed waits until every running primary of m routes slot to owner.
func (m *Member) routed(ctx context.Context, slot int, owner *Node) error {
	return waitFor(ctx, fmt.Sprintf("every primary routes slot %d to %s", slot, owner.Addr()), func() (bool, error) {
		for _, n := range m.primaries() {
			if !n.running() {
				continue
			}
			if addr, err := n.slotOwner(ctx, slot); addr != owner.Addr() || err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// slotOwner returns the address of the primary that n routes slot to, ""
// if none.
func (n *Node) slotOwner(ctx context.Context, slot int) (string, error) {
	c := n.client()
	defer c.Close()
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("redislab: CLUSTER SHARDS on %s: %w", n.Addr(), err)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) < r.Start || int64(slot) > r.End {
				continue
			}
			for _, nd := range sh.Nodes {
				if nd.Role == "master" {
					return net.JoinHostPort(nd.IP, strconv.FormatInt(nd.Port, 10)), nil
				}
			}
		}
	}
	return "", nil
}

// primaries returns the member's current primaries, in shard order.
func (m *Member) primaries() []*Node {
	out := make([]*Node, len(m.Shards))
	for i, s := range m.Shards {
		out[i] = s.Primary()
	}
	return out
}

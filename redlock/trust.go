package redlock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/hashslot"
)

// TrustKey is the key TrustStart writes on a plain master: the run_id of
// a server process vouched for. It is outside any prefix, since it is about
// the server. On a cluster, each slot has its own record (trustKeyOf).
const TrustKey = "quorumlock:trusted-start"

// trustTTL is how long a TrustStart vouch lasts: far longer than any restart
// guard, after which the node's uptime alone makes it count.
const trustTTL = 24 * time.Hour

// TrustStart vouches that node's current server process started with no
// lease to forget — a master just created, or started after every lease it
// could ever have granted had expired — so that Clients count its grants at
// once instead of after the restart guard. It records the process's run_id
// (TrustKey, expiring after a day): a later restart has another run_id, and
// the vouch does not carry over to it. Call it when bringing up new masters
// (a test lab, a new deployment), never after a restart that may have lost
// leases: that is exactly what the guard is for. CheckNew tells the two
// apart from the masters' own state (their locks and starts); call it
// first, as the command "quorumlock trust" does.
//
// On a *redis.ClusterClient it vouches every primary of the cluster
// (ForEachMaster), and on a client of one cluster node that node: a
// script may read only keys of its own slot, so each primary writes one
// record per slot it serves (trustKeyOf), naming its own run_id. Replicas
// are never vouched: one promoted later has a run_id of its own, and
// counts by its uptime. A slot moved later carries its record to a server
// of another run_id, which it does not vouch for.
//
// A replica is refused with ErrReplica (its votes never count), whether or
// not it accepts writes. It needs INFO and SET (and, on a cluster, CLUSTER
// MYID and CLUSTER SLOTS) on node; it does not close node.
func TrustStart(ctx context.Context, node redis.UniversalClient) error {
	if cc, ok := node.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, p *redis.Client) error {
			return vouchServer(ctx, p)
		})
	}
	return vouchServer(ctx, node)
}

// vouchServer vouches for the one server process node talks to.
func vouchServer(ctx context.Context, node redis.UniversalClient) error {
	info, err := node.Info(ctx, "server", "replication").Result()
	if err != nil {
		return fmt.Errorf("redlock: TrustStart: INFO: %w", err)
	}
	runID := infoField(info, "run_id")
	if runID == "" {
		return fmt.Errorf("redlock: TrustStart: INFO server has no run_id")
	}
	if role := infoField(info, "role"); role != "" && role != "master" {
		return fmt.Errorf("%w: TrustStart: INFO replication says role:%s; vouch for masters only", ErrReplica, role)
	}
	keys := []string{TrustKey}
	if infoField(info, "redis_mode") == "cluster" {
		slots, err := ownSlots(ctx, node)
		if err != nil {
			return fmt.Errorf("redlock: TrustStart: %w", err)
		}
		keys = keys[:0]
		for _, s := range slots {
			keys = append(keys, trustKeyOf(s))
		}
	}
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Set(ctx, k, runID, trustTTL)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redlock: TrustStart: SET %s (%d records): %w", keys[0], len(keys), err)
	}
	return nil
}

// ownSlots returns the slots the cluster node node talks to serves as a
// primary, as it sees them itself.
func ownSlots(ctx context.Context, node redis.UniversalClient) ([]int, error) {
	id, err := node.ClusterMyID(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER MYID: %w", err)
	}
	ranges, err := node.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	var slots []int
	for _, r := range ranges {
		if len(r.Nodes) > 0 && r.Nodes[0].ID == id {
			for s := r.Start; s <= r.End; s++ {
				slots = append(slots, s)
			}
		}
	}
	return slots, nil
}

// trustKey is the trust record that covers lock on this node (start.lua's
// trust_key): TrustKey on a plain master, else its slot's record.
func (n *node) trustKey(lock string) string {
	if !n.cluster {
		return TrustKey
	}
	return trustKeyOf(slotOf(lock))
}

// trustKeyOf is the trust record of a cluster slot: TrustKey with a hash
// tag of that slot.
func trustKeyOf(slot int) string {
	return TrustKey + ":{" + slotTags()[slot] + "}"
}

// slotTags holds, per slot, the shortest base-36 tag (the first found)
// that hashes to it: computed once, in a few ms.
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, hashslot.Count)
	for i, left := int64(0), hashslot.Count; left > 0; i++ {
		tag := strconv.FormatInt(i, 36)
		if s := slotOf(tag); tags[s] == "" {
			tags[s] = tag
			left--
		}
	}
	return tags
})

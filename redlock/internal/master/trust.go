package master

import (
	"context"
	"fmt"
	"slices"
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

// TrustStart vouches for the server process(es) node talks to: every
// primary of a *redis.ClusterClient, else its one server (redlock.TrustStart
// states the contract).
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
	keys, ownerRecord := []string{TrustKey}, []any(nil)
	if infoField(info, "redis_mode") == "cluster" {
		if keys, ownerRecord, err = slotRecords(ctx, node, info); err != nil {
			return fmt.Errorf("redlock: TrustStart: %w", err)
		}
	}
	// A primary serves up to 16384 slots: its records go out in pipelines
	// of vouchBatch, each well within a client's read and write timeouts.
	for part := range slices.Chunk(keys, vouchBatch) {
		_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range part {
				p.Set(ctx, k, runID, trustTTL)
				if ownerRecord != nil {
					p.HSet(ctx, ownerKeyOf(SlotOf(k)), ownerRecord...)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("redlock: TrustStart: SET %s (%d records): %w", part[0], len(keys), err)
		}
	}
	return nil
}

// vouchBatch is how many slots' records TrustStart writes per pipeline.
const vouchBatch = 512

// slotRecords returns the trust records of the slots the cluster node node
// serves, and the owner record that vouches for it there: this server,
// replication ID and config epoch since 0 (prelude.lua: served_ms). A
// replica promoted later, or this server after a failover back to it, has
// another config epoch.
func slotRecords(ctx context.Context, node redis.UniversalClient, info string) ([]string, []any, error) {
	replid := infoField(info, "master_replid")
	if replid == "" {
		return nil, nil, fmt.Errorf("INFO replication has no master_replid")
	}
	ci, err := node.ClusterInfo(ctx).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("CLUSTER INFO: %w", err)
	}
	epoch := infoField(ci, "cluster_my_epoch")
	if epoch == "" {
		return nil, nil, fmt.Errorf("CLUSTER INFO has no cluster_my_epoch")
	}
	id, slots, err := servedSlots(ctx, node)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, len(slots))
	for _, s := range slots {
		keys = append(keys, trustKeyOf(s))
	}
	return keys, []any{"by", id, "repl", replid, "epoch", epoch, "since", 0}, nil
}

// servedSlots returns the node ID of the cluster node node talks to, and the
// slots it serves as a primary, as it sees them itself (CLUSTER SHARDS:
// its shard's slots, if it is that shard's primary).
func servedSlots(ctx context.Context, node redis.UniversalClient) (string, []int, error) {
	id, err := node.ClusterMyID(ctx).Result()
	if err != nil {
		return "", nil, fmt.Errorf("CLUSTER MYID: %w", err)
	}
	shards, err := node.ClusterShards(ctx).Result()
	if err != nil {
		return "", nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
	}
	var slots []int
	for _, sh := range shards {
		if !primaryIn(sh, id) {
			continue
		}
		for _, r := range sh.Slots {
			for s := r.Start; s <= r.End; s++ {
				slots = append(slots, int(s))
			}
		}
	}
	return id, slots, nil
}

// primaryIn reports whether the node of ID id is sh's primary.
func primaryIn(sh redis.ClusterShard, id string) bool {
	for _, n := range sh.Nodes {
		if n.ID == id {
			return n.Role == "master"
		}
	}
	return false
}

// StartKeys are the records prelude.lua reads for lock on this node: the
// trust record (trust_key) — TrustKey on a plain master, else its slot's —
// and on a cluster the slot's owner record (owner_key), on a Sentinel
// member the master's (MasterOwnerKey).
func (nd *Node) StartKeys(lock string) []string {
	if nd.failover {
		return failoverStartKeys
	}
	if !nd.cluster {
		return plainStartKeys
	}
	slot := SlotOf(lock)
	return []string{trustKeyOf(slot), ownerKeyOf(slot)}
}

// plainStartKeys is StartKeys on a plain master, shared read-only.
var plainStartKeys = []string{TrustKey}

// MasterOwnerKey is the owner record of the master of a Sentinel member
// (prelude.lua: master_served_ms): one per server, like TrustKey.
const MasterOwnerKey = "quorumlock:master-owner"

// failoverStartKeys is StartKeys on a Sentinel member, shared read-only.
var failoverStartKeys = []string{TrustKey, MasterOwnerKey}

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
		if s := SlotOf(tag); tags[s] == "" {
			tags[s] = tag
			left--
		}
	}
	return tags
})

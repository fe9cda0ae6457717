package redlock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// Vouching for a new master's process (TrustStart, CheckNew), done by the
// per-master layer (internal/master: trust.go, trustcheck.go).

// TrustKey, "quorumlock:trusted-start", is the key TrustStart writes on a
// plain master: the run_id of a server process vouched for. It is outside any prefix, since it is about
// the server. On a cluster, each slot has its own record (TrustKeyFor).
const TrustKey = master.TrustKey

// TrustStart vouches that node's current server process started with no
// lease to forget — a master just created, or started after every lease it
// could have granted had expired — so that Clients count its grants at once
// instead of after the restart guard. It records the process's run_id
// (TrustKey, expiring after a day): a later restart has another run_id and
// is not vouched for. Never use it after a restart that may have lost
// leases, which is what the guard is for: call CheckNew first. A replica is
// refused with ErrReplica, whether or not it accepts writes; a node that
// cannot be read or written returns its error, and so does a call cut by
// ctx's end (primaries vouched for before it stay so). It needs INFO,
// SET and HSET (on a cluster, CLUSTER MYID and CLUSTER SHARDS too), and
// does not close node. On a *redis.ClusterClient it vouches every primary,
// each writing a record per slot it serves, in
// pipelines of 512 slots: ctx bounds the whole vouch, which takes
// longer with more slots; to bound each call instead, give node a hook or
// timeouts of its own (quorumlock trust does: its --timeout is per call).
func TrustStart(ctx context.Context, node redis.UniversalClient) error {
	return master.TrustStart(ctx, node)
}

// ErrInUse is matched by CheckNew's errors for a node that TrustStart must
// not vouch for because the masters given with it are in use.
var ErrInUse = master.ErrInUse

// NewSpread, 10 s, is how far apart the starts of a new deployment's
// masters may be: a master that has been up longer than another by more
// than this was there before it, so the younger one may have restarted
// while in use.
const NewSpread = master.NewSpread

// An InUseError says why vouching for one node is unsafe: another node
// given with it (Other, an index into CheckNew's nodes; the node itself
// when it holds locks) shows the deployment in use.
type InUseError struct {
	Other int    // index in CheckNew's nodes of the node in use
	Why   string // e.g. "holds 2 live locks under \"quorumlock:\" (quorumlock:{k})"
}

func (e *InUseError) Error() string   { return fmt.Sprintf("redlock: node %d %s", e.Other, e.Why) }
func (e *InUseError) Unwrap() error   { return ErrInUse }
func (e *InUseError) Is(t error) bool { return t == ErrInUse }

// CheckNew reports, for each of nodes, whether vouching for it with
// TrustStart is safe: nil, or why not. A node is refused with an *InUseError
// (matching ErrInUse) when any node given holds a live lock, reader or
// permit under prefix, or when another node given has been up longer than
// it by more than NewSpread; a replica with ErrReplica; a node CheckNew
// cannot read (down, NOPERM, ctx ended) with that error. A node whose
// running process is already vouched for is not checked. Pass every master
// of the deployment, so that their locks and starts are seen; a
// *redis.ClusterClient is surveyed on every primary (its locks are all of
// theirs, its start the youngest primary's). It reads INFO, the vouch
// records and SCANs the keys under prefix; it writes nothing.
func CheckNew(ctx context.Context, nodes []redis.UniversalClient, prefix string) []error {
	errs := master.CheckNew(ctx, nodes, prefix)
	for i, err := range errs {
		if e, ok := err.(*master.InUseError); ok {
			errs[i] = &InUseError{Other: e.Other, Why: e.Why}
		}
	}
	return errs
}

// TrustKeyFor returns the vouch record that covers key on a Redis Cluster
// node: the record of key's slot, which TrustStart writes on the slot's
// primary naming its run_id ("quorumlock status" reads it there). On a
// plain master the vouch is TrustKey.
func TrustKeyFor(key string) string { return master.TrustKeyFor(key) }

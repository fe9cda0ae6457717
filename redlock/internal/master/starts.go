package master

import (
	"fmt"
	"strings"
	"time"
)

// Start state per answering server: a member that is a Redis Cluster
// grants from several processes (one per shard), each with its own start.
// A node keeps what it learnt of each under the server's cluster node ID
// ("" on a plain master: a map of one), so that one shard's restart never
// overwrites, or borrows, another's state (docs/SAFETY.md, "Restarts").

// A StartState is what the Client learnt of one server's process.
type StartState struct {
	RunID   string    // of the process last seen in a reply; "" if none reported yet
	saved   string    // its LASTSAVE as last seen, once it can be relied on; else ""
	Started time.Time // when that process started, on the Client's clock; zero if vouched
	seen    time.Time // when a reply last reported on it, on the Client's clock
	// took is the latest time one of its slots was taken over (a failover,
	// a moved slot: prelude.lua's served_ms), for AnyYoung; zero if none seen.
	took time.Time
}

// ownerKey names a cluster slot's owner record (prelude.lua's
// owner_key), one per slot, with the slot's hash tag (ownerKeyOf).
const ownerKey = "quorumlock:slot-owner"

// ownerKeyOf is the owner record of a cluster slot.
func ownerKeyOf(slot int) string {
	return ownerKey + ":{" + slotTags()[slot] + "}"
}

// staleServer is how long a server's state is kept unseen: resharding and
// replacements retire cluster node IDs.
const staleServer = trustTTL

// LastSaved is the scripts' restart argument for this node: its LASTSAVE
// as last seen, or "?" while none can be relied on (then every fresh grant
// reports its start). On a cluster member it is "@" and "id:LASTSAVE,"
// per server whose LASTSAVE can be relied on: prelude.lua picks the entry of
// the server that runs it, by CLUSTER MYID.
func (nd *Node) LastSaved() string {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if !nd.cluster {
		if st := nd.starts[""]; st != nil && st.saved != "" {
			return st.saved
		}
		return RestartUnknown
	}
	var b strings.Builder
	b.WriteString(RestartCluster)
	for id, st := range nd.starts {
		if id != "" && st.saved != "" {
			b.WriteString(id + RestartIDEnd + st.saved + RestartSavedEnd)
		}
	}
	return b.String()
}

// Learn records what a reply said of its server's start, and returns that
// server's state as this reply leaves it: a grant is judged by the state of
// the server that made it, read in the same critical section. A run_id this
// Client has not seen from the server comes from a process it meets for the
// first time — new, or restarted, maybe without its data — whose start is
// set from its uptime (less the slack), or to long ago if TrustStart vouched
// for it. A node that cannot report its start is an error.
func (nd *Node) Learn(s StartInfo, now time.Time) (StartState, error) {
	if s.unknown != "" {
		return StartState{}, fmt.Errorf("%w: %s; allow INFO and LASTSAVE to this user, or turn detection off with WithRestartGuard(0) if the masters keep their data across restarts",
			ErrStartUnknown, s.unknown)
	}
	if s.runID != "" {
		if s.role != "" && s.role != "master" {
			nd.isMaster.Store(false)
			return StartState{}, fmt.Errorf("%w: INFO replication says role:%s", ErrReplica, s.role)
		}
		nd.isMaster.Store(true)
	}
	nd.mu.Lock()
	defer nd.mu.Unlock()
	st := nd.starts[s.server]
	if s.runID == "" {
		if st == nil {
			return StartState{}, nil
		}
		st.seen = now
		return st.forSlot(s, now), nil
	}
	if st == nil {
		st = nd.newServer(s.server, now)
	}
	if s.runID != st.RunID {
		// uptime_in_seconds may read up to a second more than has passed,
		// never less: the process has been up at least this long.
		st.Started = now.Add(-max(0, s.uptime-UptimeSlack))
		if s.vouched {
			st.Started = time.Time{}
		}
	}
	st.RunID, st.saved, st.seen = s.runID, "", now
	if s.sinceSave >= savedTrust {
		st.saved = s.saved
	}
	return st.forSlot(s, now), nil
}

// forSlot returns the server's state as it holds for the keys' slot of a
// reply: on a cluster, a server counts from when it took the slot over
// (prelude.lua: served_ms) if that is later than its start — so that a
// replica promoted, whatever its uptime, or a slot moved to it, sits out
// the guard as a restarted server does. nd.mu is held.
func (st *StartState) forSlot(s StartInfo, now time.Time) StartState {
	out := *st
	if !s.hasServed {
		return out
	}
	took := now.Add(-s.served)
	if took.After(out.Started) {
		out.Started = took
	}
	if took.After(st.took) {
		st.took = took
	}
	return out
}

// newServer adds the state of a server first heard of, and drops those
// not heard of for staleServer. nd.mu is held.
func (nd *Node) newServer(id string, now time.Time) *StartState {
	if nd.starts == nil {
		nd.starts = map[string]*StartState{}
	}
	for old, st := range nd.starts {
		if now.Sub(st.seen) > staleServer {
			delete(nd.starts, old)
		}
	}
	st := &StartState{}
	nd.starts[id] = st
	return st
}

// Left returns how long the server's process, as learnt, must still be
// up before it has been up for d: 0 or less once it has, or was vouched
// for.
func (st StartState) Left(d time.Duration, now time.Time) time.Duration {
	return st.Started.Add(d).Sub(now)
}

// Old reports whether a start was reported and the server's process, as
// learnt, has been up for age or was vouched for.
func (st StartState) Old(age time.Duration, now time.Time) bool {
	return st.RunID != "" && st.Left(age, now) <= 0
}

// AnyYoung reports whether one of the node's servers is known to be
// younger than age, or to have taken over one of its slots less than age
// ago.
func (nd *Node) AnyYoung(age time.Duration, now time.Time) bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	for _, st := range nd.starts {
		if st.RunID == "" {
			continue
		}
		if !st.Old(age, now) || now.Sub(st.took) < age {
			return true
		}
	}
	return false
}

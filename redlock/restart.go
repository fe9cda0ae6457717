package redlock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Restart detection: a master that restarts at once without its data may
// grant a key that a holder still holds on other masters. A grant is counted
// only once its node has been up for the restart guard (WithRestartGuard) —
// whether this Client knew the node before or meets it for the first time,
// since a process that just started cannot tell a new master from one that
// restarted empty. The node's start is read from its uptime when the Client
// first meets its process, and timed on the Client's clock after that.

// startInfo is what a grant may report about its node's start. A grant
// reports it only when the node's LASTSAVE changed since this Client last
// saw it (a restart, or a save); otherwise it is zero.
type startInfo struct {
	runID, saved string
	uptime       time.Duration
	sinceSave    time.Duration // the node's clock less its LASTSAVE
	vouched      bool          // TrustStart vouched for this run_id
	role         string        // "master", "slave", or "" if unknown
	unknown      string        // why the node could not report its start
	longest      time.Duration // the TTL record of the locks asked (lease_ttl)
	hasLongest   bool
	server       string // the answering server's cluster node ID; "" on a plain master
}

// savedTrust is how old a LASTSAVE must be seen before it is relied on: it
// counts whole seconds, so a node that restarts within the same second as its
// previous start or save keeps the same value; seen at least this long after
// it, any later restart changes it.
const savedTrust = 2 * time.Second

// uptimeSlack covers Redis's uptime_in_seconds, which counts whole seconds
// of wall-clock time and so may read up to a second more than has passed.
const uptimeSlack = time.Second

// TrustKey is the key TrustStart writes: the run_id of a server process
// vouched for. It is outside any prefix, since it is about the server.
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
// A replica is refused with ErrReplica (its votes never count), whether or
// not it accepts writes. It needs INFO and SET on node; it does not close
// node.
func TrustStart(ctx context.Context, node redis.UniversalClient) error {
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
	if err := node.Set(ctx, TrustKey, runID, trustTTL).Err(); err != nil {
		return fmt.Errorf("redlock: TrustStart: SET %s: %w", TrustKey, err)
	}
	return nil
}

func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// startOf reads the start info of a granting reply of acquire.lua for keys
// keys: {1, token per key..., start_info...} (start.lua).
func startOf(reply []any, keys int) startInfo {
	if len(reply) < 2+keys {
		return startInfo{}
	}
	return startFields(reply[1+keys:])
}

// startFields reads start.lua's start_info: {uptime, run_id, LASTSAVE,
// time, vouched, role, TTL record}, {-2, TTL record}, or {-1, why} — on a
// cluster member followed by the answering server's node ID, and {-3, node
// ID} when nothing else need be said.
func startFields(f []any) startInfo {
	var s startInfo
	uptime, _ := replyInt(f, 0)
	switch uptime {
	case -3: // a cluster server as the client knows it
		if len(f) > 1 {
			s.server, _ = f[1].(string)
		}
		return s
	case -2: // the start as the client knows it; only the record
		if ms, ok := replyInt(f, 1); ok {
			s.longest, s.hasLongest = recordOf(ms), true
		}
		if len(f) > 2 {
			s.server, _ = f[2].(string)
		}
		return s
	}
	if uptime < 0 {
		if len(f) > 1 {
			s.unknown, _ = f[1].(string)
		}
		if s.unknown == "" {
			s.unknown = "unreadable reply"
		}
		return s
	}
	if len(f) < 6 {
		s.unknown = fmt.Sprintf("unexpected start info %v", f)
		return s
	}
	s.uptime = time.Duration(uptime) * time.Second
	s.runID, _ = f[1].(string)
	s.saved, _ = f[2].(string)
	clock, _ := f[3].(string)
	s.sinceSave = secondsBetween(s.saved, clock)
	vouched, _ := replyInt(f, 4)
	s.vouched = vouched == 1
	s.role, _ = f[5].(string)
	if ms, ok := replyInt(f, 6); ok {
		s.longest, s.hasLongest = recordOf(ms), true
	}
	if len(f) > 7 {
		s.server, _ = f[7].(string)
	}
	return s
}

// recordOf reads a TTL record in ms: -1 is a hold that records none
// (readers, an older version's lock), read as MaxRestartGuard.
func recordOf(ms int64) time.Duration {
	if ms < 0 {
		return MaxRestartGuard
	}
	return time.Duration(ms) * time.Millisecond
}

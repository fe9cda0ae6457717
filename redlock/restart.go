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
	unknown      string        // why the node could not report its start
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
// leases: that is exactly what the guard is for.
//
// It needs INFO and SET on node; it does not close node.
func TrustStart(ctx context.Context, node redis.UniversalClient) error {
	info, err := node.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("redlock: TrustStart: INFO server: %w", err)
	}
	runID := infoField(info, "run_id")
	if runID == "" {
		return fmt.Errorf("redlock: TrustStart: INFO server has no run_id")
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

// lastSaved is acquire.lua's restart argument for this node: its LASTSAVE as
// last seen, or "?" while none can be relied on (then every fresh grant
// reports its start).
func (n *node) lastSaved() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.saved == "" {
		return "?"
	}
	return n.saved
}

// admit decides whether a grant of this node counts under guard. A grant
// that reports a run_id this Client has not seen comes from a process it
// meets for the first time — new, or restarted, maybe without its data — and
// the node's start is set from its uptime (less the slack); one that cannot
// report its start is not counted at all.
func (n *node) admit(s startInfo, guard time.Duration, now time.Time) error {
	if s.unknown != "" {
		return fmt.Errorf("%w: %s; allow INFO and LASTSAVE to this user, or turn detection off with WithRestartGuard(0) if the masters keep their data across restarts",
			ErrStartUnknown, s.unknown)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.runID != "" {
		if s.runID != n.runID {
			n.started = now.Add(-(s.uptime - uptimeSlack))
			if s.vouched {
				n.started = time.Time{}
			}
		}
		n.runID, n.saved = s.runID, ""
		if s.sinceSave >= savedTrust {
			n.saved = s.saved
		}
	}
	if n.runID == "" {
		// No grant of this node reported its start yet (detection was off
		// for the earlier calls): this one must.
		return fmt.Errorf("%w: no start reported yet", ErrStartUnknown)
	}
	if left := n.started.Add(guard).Sub(now); left > 0 {
		return fmt.Errorf("%w (%v more)", ErrNodeRestarted, left.Round(time.Millisecond))
	}
	return nil
}

// startOf reads the start info of a granting reply of acquire.lua: {1,
// token, uptime, run_id, LASTSAVE, time, vouched}, or {1, token, -1, why}.
func startOf(reply []any) startInfo {
	var s startInfo
	if len(reply) < 4 {
		return s
	}
	uptime, _ := replyInt(reply, 2)
	if uptime < 0 {
		s.unknown, _ = reply[3].(string)
		if s.unknown == "" {
			s.unknown = "unreadable reply"
		}
		return s
	}
	if len(reply) < 7 {
		s.unknown = fmt.Sprintf("unexpected start info %v", reply[2:])
		return s
	}
	s.uptime = time.Duration(uptime) * time.Second
	s.runID, _ = reply[3].(string)
	s.saved, _ = reply[4].(string)
	clock, _ := reply[5].(string)
	s.sinceSave = secondsBetween(s.saved, clock)
	vouched, _ := replyInt(reply, 6)
	s.vouched = vouched == 1
	return s
}

package master

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Restart detection: a master that restarts at once without its data may
// grant a key that a holder still holds on other masters. A grant is counted
// only once its node has been up for the restart guard (WithRestartGuard) —
// whether this Client knew the node before or meets it for the first time,
// since a process that just started cannot tell a new master from one that
// restarted empty. The node's start is read from its uptime when the Client
// first meets its process, and timed on the Client's clock after that.

// A StartInfo is what a grant may report about its node's start. A grant
// reports it only when the node's LASTSAVE changed since this Client last
// saw it (a restart, or a save); otherwise it is zero.
type StartInfo struct {
	runID, saved string
	uptime       time.Duration
	sinceSave    time.Duration // the node's clock less its LASTSAVE
	vouched      bool          // TrustStart vouched for this run_id
	role         string        // "master", "slave", or "" if unknown
	unknown      string        // why the node could not report its start
	// RecordMS is the TTL record of the locks asked (lease_ttl), in ms: -1
	// is a hold that records none (readers, an older version's lock).
	RecordMS  int64
	HasRecord bool
	server    string        // the answering server's cluster node ID; "" on a plain master
	served    time.Duration // how long server has served the keys' slot (prelude.lua: served_ms)
	hasServed bool
}

// savedTrust is how old a LASTSAVE must be seen before it is relied on: it
// counts whole seconds, so a node that restarts within the same second as its
// previous start or save keeps the same value; seen at least this long after
// it, any later restart changes it.
const savedTrust = 2 * time.Second

// UptimeSlack covers Redis's uptime_in_seconds, which counts whole seconds
// of wall-clock time and so may read up to a second more than has passed.
const UptimeSlack = time.Second

func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// StartOf reads the start info of a granting reply of acquire.lua for keys
// keys: {1, token per key..., start_info...} (prelude.lua).
func StartOf(reply []any, keys int) StartInfo {
	if len(reply) < 2+keys {
		return StartInfo{}
	}
	return StartFields(reply[1+keys:])
}

// StartFields reads prelude.lua's start_info: {uptime, run_id, LASTSAVE,
// time, vouched, role, TTL record}, {-2, TTL record}, or {-1, why} — on a
// cluster member followed by the answering server's node ID, and {-3, node
// ID} when nothing else need be said.
func StartFields(f []any) StartInfo {
	var s StartInfo
	uptime, _ := intAt(f, 0)
	switch uptime {
	case -3: // a cluster server as the client knows it
		s.servedFrom(f, 1)
		return s
	case -2: // the start as the client knows it; only the record
		s.RecordMS, s.HasRecord = intAt(f, 1)
		s.servedFrom(f, 2)
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
	vouched, _ := intAt(f, 4)
	s.vouched = vouched == 1
	s.role, _ = f[5].(string)
	s.RecordMS, s.HasRecord = intAt(f, 6)
	s.servedFrom(f, 7)
	return s
}

// servedFrom reads a cluster server's node ID at f[i], and how long it has
// served the keys' slot (ms) at f[i+1].
func (s *StartInfo) servedFrom(f []any, i int) {
	if len(f) > i {
		s.server, _ = f[i].(string)
	}
	if ms, ok := intAt(f, i+1); ok {
		s.served, s.hasServed = time.Duration(max(0, ms))*time.Millisecond, true
	}
}

// intAt returns reply[i] if it is an integer.
func intAt(reply []any, i int) (int64, bool) {
	if i >= len(reply) {
		return 0, false
	}
	v, ok := reply[i].(int64)
	return v, ok
}

// secondsBetween returns to − from, two decimal counts of seconds, or 0 if
// either does not parse.
func secondsBetween(from, to string) time.Duration {
	f, err1 := strconv.ParseInt(from, 10, 64)
	t, err2 := strconv.ParseInt(to, 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(t-f) * time.Second
}

package redlock

import (
	"fmt"
	"time"
)

// Restart detection: a master that restarts at once without its data may
// grant a key that a holder still holds on other masters. Each Client
// remembers, per node, the run_id it last saw and does not count the grants
// of a node whose run_id changed until it has been up for the restart guard
// (WithRestartGuard).

// startInfo is what a grant may report about its node's start: its run_id,
// uptime and LASTSAVE. A grant reports it only when LASTSAVE changed since
// this Client last saw it; otherwise it is zero.
type startInfo struct {
	runID, saved string
	uptime       time.Duration
	sinceSave    time.Duration // the node's clock less its LASTSAVE
}

// savedTrust is how old a LASTSAVE must be seen before it is relied on: it
// counts whole seconds, so a node that restarts within the same second as its
// previous start or save keeps the same value; seen at least this long after
// it, any later restart changes it.
const savedTrust = 2 * time.Second

// uptimeSlack covers Redis's uptime_in_seconds, which counts whole seconds
// of wall-clock time and so may read up to a second more than has passed.
const uptimeSlack = time.Second

// lastSaved is acquire.lua's ARGV[6] for this node: its LASTSAVE as last
// seen, or "?" while none can be relied on (then every fresh grant reports
// run_id and uptime).
func (n *node) lastSaved() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.saved == "" {
		return "?"
	}
	return n.saved
}

// admit decides whether a grant of this node counts. If the grant reports a
// run_id other than the one this Client last saw, the node restarted — maybe
// without its data, so it may have granted a key that a holder still holds
// elsewhere — and its grants are not counted until it has been up for guard,
// timed on this Client's clock from now (its uptime, less the slack, shortens
// the wait). A Client that first hears from a node after its restart cannot
// tell.
func (n *node) admit(s startInfo, guard time.Duration, now time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.runID != "" {
		if n.runID != "" && s.runID != n.runID {
			if wait := min(guard, guard-(s.uptime-uptimeSlack)); wait > 0 {
				n.quarantine = now.Add(wait)
			}
		}
		n.runID, n.saved = s.runID, ""
		if s.sinceSave >= savedTrust {
			n.saved = s.saved
		}
	}
	if left := n.quarantine.Sub(now); left > 0 {
		return fmt.Errorf("%w (%v more)", ErrNodeRestarted, left.Round(time.Millisecond))
	}
	return nil
}

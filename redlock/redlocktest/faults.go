package redlocktest

import (
	"fmt"
	"time"
)

// Kill ends master i as a crash does: its connections close, dials are
// refused, and its data is gone. Killing a killed master does nothing.
func (c *Cluster) Kill(i int) {
	if m := c.master("Kill", i); m != nil {
		m.op.Lock()
		defer m.op.Unlock()
		m.kill()
	}
}

// Restart brings master i back, empty, as a new process on the same
// address — killing it first if it runs: a new run_id, an uptime from zero,
// not frozen. Its grants sit out the restart guard, as a restarted
// redis-server's do. If the address cannot be listened on again (another
// process took the port), the master stays killed and the failure is
// reported (Start's test fails; New's Close returns it).
func (c *Cluster) Restart(i int) {
	m := c.master("Restart", i)
	if m == nil {
		return
	}
	m.op.Lock()
	defer m.op.Unlock()
	m.kill()
	if err := m.up(); err != nil {
		c.report(fmt.Errorf("redlocktest: Restart(%d): %w", i, err))
	}
}

// Freeze stops master i as SIGSTOP does: connections are still accepted,
// but nothing sent to it is processed or answered, so calls time out,
// until Thaw. It does nothing to a killed master.
func (c *Cluster) Freeze(i int) {
	if m := c.master("Freeze", i); m != nil {
		m.op.Lock()
		defer m.op.Unlock()
		m.freeze()
	}
}

// Thaw lets master i go on as SIGCONT does: what was sent while it was
// frozen is processed, in order, and answered.
func (c *Cluster) Thaw(i int) {
	if m := c.master("Thaw", i); m != nil {
		m.op.Lock()
		defer m.op.Unlock()
		m.thaw()
	}
}

// SetLatency delays every reply of master i by d from now on — 0 for none —
// on all its connections and across restarts. d must not be negative.
func (c *Cluster) SetLatency(i int, d time.Duration) {
	m := c.master("SetLatency", i)
	switch {
	case m == nil:
	case d < 0:
		c.report(fmt.Errorf("redlocktest: SetLatency(%d, %v): negative latency", i, d))
	default:
		m.setLatency(d)
	}
}

// master returns master i, or reports a bad index for call and returns nil.
func (c *Cluster) master(call string, i int) *master {
	if i < 0 || i >= len(c.masters) {
		c.report(fmt.Errorf("redlocktest: %s(%d): no master %d (have %d: 0 to %d)", call, i, i, len(c.masters), len(c.masters)-1))
		return nil
	}
	return c.masters[i]
}

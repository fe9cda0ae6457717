package lab_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/history"
)

// A scenario applies one fault at a time to the compose lab while the
// holders (and the demo) take the lock, and checks each fault's effect.
type scenario struct {
	t      *testing.T
	lab    *composeLab
	h      *holders
	faults []history.Record // each fault's span, for the run's report
}

// A hit is the master a phase's fault hits (a toxiproxy port of the lab)
// and its kind in the run's report (history.Fault*); a calm phase hits none.
type hit struct{ node, kind string }

// phase runs fault, which returns its effect, and logs both with the holds
// taken meanwhile: none is a failure, as a minority must not stop buyers.
// The fault's span is kept for the report, on the node it hit.
func (s *scenario) phase(name string, on hit, fault func() string) {
	s.t.Helper()
	before := s.h.count.Load()
	from := s.h.rec.Now()
	effect := fault()
	if on.kind != "" {
		s.faults = append(s.faults, history.Record{Type: history.TypeFault, Time: s.h.rec.Instant(from),
			End: s.h.rec.Instant(s.h.rec.Now()), Node: on.node, Fault: on.kind, Note: name})
	}
	got := s.h.count.Load() - before
	s.t.Logf("fault: %-50s effect: %s; %d holds meanwhile", name, effect, got)
	if got == 0 {
		s.t.Errorf("%s: no holder got the lock during the fault (a minority must not stop them)", name)
	}
}

// calm lets the buyers buy for a spell, with no fault.
func (s *scenario) calm() string {
	time.Sleep(faultSpell)
	return "buyers running"
}

// killAndStart kills redis2 while a holder holds the lock, and starts it
// again, on its volume, after more than a lease.
func (s *scenario) killAndStart() string {
	mark(s.t, "127.0.0.1:7002")
	s.h.waitHolding(s.t)
	s.lab.run("kill", "redis2")
	time.Sleep(faultSpell)
	s.lab.run("start", "redis2")
	s.lab.waitHealthy("redis2", time.Minute)
	return marked(s.t, "127.0.0.1:7002", true)
}

// killEmpty kills redis3 mid-lease, removes its container and volume, and
// brings it back empty.
func (s *scenario) killEmpty() string {
	mark(s.t, "127.0.0.1:7003")
	s.h.waitHolding(s.t)
	s.lab.run("kill", "redis3")
	s.lab.run("rm", "-f", "redis3")
	if out, err := exec.Command("docker", "volume", "rm", s.lab.volume("redis3-data")).CombinedOutput(); err != nil {
		s.t.Fatalf("docker volume rm: %v\n%s", err, out)
	}
	s.lab.run("up", "-d", "--no-deps", "redis3")
	s.lab.waitHealthy("redis3", time.Minute)
	return marked(s.t, "127.0.0.1:7003", false)
}

// latency slows redis4's proxy by 300ms for a spell: not redis1, which
// keeps the demo's stock.
func (s *scenario) latency() string {
	s.lab.toxic("toxic", "add", "-t", "latency", "-a", "latency=300", "-n", "lag", "redis4")
	d, err := pingTime("127.0.0.1:7104", 5*time.Second)
	time.Sleep(faultSpell)
	s.lab.toxic("toxic", "remove", "-n", "lag", "redis4")
	if err != nil || d < 250*time.Millisecond {
		s.t.Errorf("latency on redis4: PING through 7104 took %v (%v); want ≥ 300ms", d, err)
	}
	return "PING through 7104 took " + d.Round(time.Millisecond).String()
}

// blackhole makes redis5's proxy swallow everything for a spell.
func (s *scenario) blackhole() string {
	s.lab.toxic("toxic", "add", "-t", "timeout", "-a", "timeout=0", "-n", "hole", "redis5")
	_, err := pingTime("127.0.0.1:7105", 2*time.Second)
	time.Sleep(faultSpell)
	s.lab.toxic("toxic", "remove", "-n", "hole", "redis5")
	if err == nil {
		s.t.Errorf("blackhole on redis5: PING through 7105 answered")
	}
	return "PING through 7105: " + firstLine(err)
}

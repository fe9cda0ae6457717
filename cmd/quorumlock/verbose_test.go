package main

import (
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// -v logs renewals and node failures; a loss names the masters that failed.
func TestRunVerboseNamesFailedMasters(t *testing.T) {
	lab, nodes := startLab(t, 3)
	lab.RequireControl(t)
	p := start(t, "", runArgs(nodes, "verbose", "-v", "--ttl", "1s", "--grace", "200ms",
		"--", "sh", "-c", "echo started; while :; do sleep 0.05; done")...)
	testkit.Eventually(t, 10*time.Second, "a renewal logged", func() bool {
		return strings.Contains(p.stderr.String(), "renewed")
	})
	lab.Kill(t, 2)
	killed := lab.Nodes[2].Addr()
	testkit.Eventually(t, 10*time.Second, "the killed master logged", func() bool {
		return strings.Contains(p.stderr.String(), "level=WARN") && strings.Contains(p.stderr.String(), killed)
	})
	lab.Kill(t, 1)
	if code := p.wait(t, 15*time.Second); code != exitLockLost {
		t.Fatalf("status %d, want %d; stderr:\n%s", code, exitLockLost, p.stderr.String())
	}
	var loss string
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if strings.HasPrefix(line, "quorumlock: lock") && strings.Contains(line, "lost") {
			loss = line
		}
	}
	if !strings.Contains(loss, lab.Nodes[1].Addr()) {
		t.Errorf("the loss message %q does not name the failed masters; stderr:\n%s", loss, p.stderr.String())
	}
}

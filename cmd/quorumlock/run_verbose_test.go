package main

import (
	"fmt"
	"regexp"
	"slices"
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
	// Both the library's line (a failed renewal call) and run's own (the
	// master stopped answering a ping) name it.
	testkit.Eventually(t, 10*time.Second, "the killed master logged by the library and by run", func() bool {
		out := p.stderr.String()
		return strings.Contains(out, "node call failed") && strings.Contains(out, "node not answering")
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
	checkNodeNumbers(t, p.stderr.String(), lab.Addrs(), killed)
}

// nodeNumber finds a node's number and address in a message: "node 2
// (host:port)" in errors, "node=2 addr=host:port" in -v lines.
var nodeNumber = regexp.MustCompile(`node[ =](\d+)(?: \(| addr=)([^\s)]+)`)

// checkNodeNumbers checks that every node number in out is the index of the
// address it names in addrs, counted from 0 as the library's errors count,
// and that out numbers some node, and each of want, at least once.
func checkNodeNumbers(t *testing.T, out string, addrs []string, want ...string) {
	t.Helper()
	seen := map[string]bool{}
	matches := nodeNumber.FindAllStringSubmatch(out, -1)
	if len(matches) == 0 {
		t.Errorf("no numbered node in:\n%s", out)
	}
	for _, m := range matches {
		i := slices.IndexFunc(addrs, func(a string) bool { return m[2] == a || strings.HasSuffix(m[2], "@"+a) })
		if fmt.Sprint(i) != m[1] {
			t.Errorf("%q numbers %s as node %s; it is node %d of --nodes %v (counted from 0)", m[0], m[2], m[1], i, addrs)
			continue
		}
		seen[addrs[i]] = true
	}
	for _, a := range want {
		if !seen[a] {
			t.Errorf("no numbered mention of %s in:\n%s", a, out)
		}
	}
}

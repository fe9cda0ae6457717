package main

import (
	"testing"
)

// Every --ttl and --wait run accepts works: a TTL past the library's default
// fence retention (24h) gets a retention derived from it, and the longest
// accepted --wait and --ttl acquire a free lock at once.
func TestRunLongDurations(t *testing.T) {
	lab, nodes := startLab(t, 3)
	for _, args := range [][]string{
		{"--ttl", "25h"},
		{"--ttl", "4380h", "--wait", "8760h"},
		{"--wait", "8760h", "--restart-guard", "8760h", "--grace", "8760h"},
	} {
		code, _, stderr := runBinary(t, "", append(runArgs(nodes, "long", args...), "--", "true")...)
		if code != 0 {
			t.Errorf("run %v: status %d, want 0; stderr:\n%s", args, code, stderr)
		}
	}
	if got := owners(t, lab, "long"); got[0] != "" || got[1] != "" || got[2] != "" {
		t.Errorf("owners after the runs %q, want the lock released", got)
	}
}

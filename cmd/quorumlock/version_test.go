package main

import (
	"strings"
	"testing"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// version reports the library's release first, then go-redis's and Go's.
func TestVersion(t *testing.T) {
	code, out, errOut := inProcess("version")
	if code != exitOK || errOut != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "quorumlock "+redlock.Version {
		t.Errorf("first line %q, want %q", lines[0], "quorumlock "+redlock.Version)
	}
	if !strings.Contains(out, "go-redis 9.") || !strings.Contains(out, "go1.") {
		t.Errorf("version output lacks go-redis or Go:\n%s", out)
	}
	if code, _, _ := inProcess("version", "extra"); code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", code, exitUsage)
	}
}

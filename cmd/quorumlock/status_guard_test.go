package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// status and run's exit status 76 tell the same restart guard, the same
// count of masters that do not count yet, and about the same wait, for the
// same masters, every time: one computation (redlock.ViewRestartGuard).
// Brand-new masters, not vouched for, none old: the library holds their
// grants to MaxRestartGuard whatever the TTL, and a round that decides
// early must not change the count.
func TestStatusAndRunAgreeOnTheRestartGuard(t *testing.T) {
	lab := redislab.Start(t, 5) // not vouched for
	nodes := strings.Join(lab.Addrs(), ",")
	runSays := regexp.MustCompile(`(\d+) of 5 masters started less than the restart guard \(([^)]+)\) ago.*wait (\w+), until`)
	statusSays := regexp.MustCompile(`restart guard (\S+): only (\d+) of 5 masters count yet: locks are not granted for (\w+)`)
	for attempt := range 3 {
		code, _, stderr := runBinary(t, "", runArgs(nodes, "fresh", "--", "true")...)
		r := runSays.FindStringSubmatch(stderr)
		if code != exitRestartGuard || r == nil {
			t.Fatalf("run: status %d, stderr %q; want %d and the guard", code, stderr, exitRestartGuard)
		}
		code, stdout, _ := inProcess("status", "--nodes", nodes, "--key", "fresh")
		s := statusSays.FindStringSubmatch(stdout)
		if code != 0 || s == nil {
			t.Fatalf("status %d:\n%s\nwant the guard line", code, stdout)
		}
		counted, _ := strconv.Atoi(s[2])
		if r[1] != "5" || r[2] != s[1] || counted != 0 || r[2] != redlock.MaxRestartGuard.String() {
			t.Errorf("attempt %d: run says %s of 5 young under guard %s, status guard %s with %d counted; want 5 young, 0 counted, both %v",
				attempt, r[1], r[2], s[1], counted, redlock.MaxRestartGuard)
		}
		runWait, err1 := time.ParseDuration(r[3])
		statusWait, err2 := time.ParseDuration(s[3])
		if err1 != nil || err2 != nil || (runWait-statusWait).Abs() > 2*time.Second {
			t.Errorf("attempt %d: run waits %s, status %s; want the same within 2s", attempt, r[3], s[3])
		}
	}
}

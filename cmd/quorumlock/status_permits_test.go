package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// status without --limit, while every permit of a semaphore of the name is
// held (run --key enc --limit 2, twice), says that permits are held and how
// many — not that the key is free, while a third run is refused.
func TestStatusSeesHeldPermitsWithoutLimit(t *testing.T) {
	lab, nodes := startLab(t, 3)
	for range 2 {
		c := testkit.Open(t, redlock.New, lab.Clients(t), redlock.WithTTL(time.Minute), redlock.WithNodeTimeout(time.Second))
		if _, err := c.Acquire(context.Background(), "enc", 2); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := inProcess("status", "--nodes", nodes, "--key", "enc")
	want := `permits held: 2 of 2 permits of semaphore "enc" held on a majority (limit 2, read from the nodes); no node holds "enc" as a lock`
	if code != 0 || !strings.Contains(stdout, want) || strings.Contains(stdout, "free: no node holds the lock") {
		t.Errorf("status %d; stdout:\n%s\nstderr:\n%s\nwant the line %q, and no free verdict", code, stdout, stderr, want)
	}
	code, st := statusJSON(t, nodes, "enc")
	if s := st.Semaphore; code != 0 || s == nil || !s.Detected || s.Held != 2 || s.Limit != 2 {
		t.Errorf("status --json %d, semaphore %+v; want detected, 2 of 2 held", code, s)
	}
	if code, _, stderr := runBinary(t, "", runArgs(nodes, "enc", "--limit", "2", "--", "true")...); code != exitTempFail {
		t.Errorf("a third run: status %d, want %d; stderr:\n%s", code, exitTempFail, stderr)
	}
	// A key no semaphore uses stays free, with no semaphore shown.
	if code, st := statusJSON(t, nodes, "plain"); code != 0 || st.Semaphore != nil || st.State != stateFree {
		t.Errorf("status of a free key: %d, %+v; want free, no semaphore", code, st)
	}
}

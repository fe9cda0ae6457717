package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// statusJSON runs status --json in-process and decodes its output.
func statusJSON(t *testing.T, nodes, key string) (int, *lockStatus) {
	t.Helper()
	code, stdout, stderr := inProcess("status", "--nodes", nodes, "--key", key, "--json")
	var st lockStatus
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status --json: %v; stdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return code, &st
}

func TestStatusJSON(t *testing.T) {
	lab, nodes := startLab(t, 3)
	lab.RequireControl(t)
	l := holdLock(t, lab, "jobs")

	code, st := statusJSON(t, nodes, "jobs")
	if code != 0 || !st.Held || st.Holders < 2 || st.Need != 2 || st.Reachable != 3 || st.Owner == "" {
		t.Fatalf("status %d, %+v; want 0, held on 2 or 3 of 3 (need 2)", code, st)
	}
	if st.LockKey != "quorumlock:{jobs}" || st.FenceKey != "quorumlock:{jobs}:fence" {
		t.Errorf("keys %q, %q", st.LockKey, st.FenceKey)
	}
	spare := 2 // a node whose loss leaves the lock held
	fenced := 0
	for i, n := range st.Nodes {
		if n.Owner == "" {
			spare = i
			continue
		}
		if n.Addr != lab.Nodes[i].Addr() || !n.Reachable || n.Owner != st.Owner || n.TTLMillis <= 0 || n.Holds != 1 || n.Fence <= 0 {
			t.Errorf("node %d: %+v; want %s, owner %s, a TTL, 1 hold, a fence", i, n, lab.Nodes[i].Addr(), st.Owner)
		}
		if n.Fence >= l.Token() {
			fenced++
		}
	}
	// The token was written back to a majority; a node that granted after the
	// majority was counted keeps its own counter, above or below it.
	if fenced < st.Need {
		t.Errorf("%d nodes have a fence ≥ the token %d, want a majority (%d)", fenced, l.Token(), st.Need)
	}

	lab.Kill(t, spare)
	code, st = statusJSON(t, nodes, "jobs")
	if down := st.Nodes[spare]; code != 0 || !st.Held || down.Reachable || down.Error == "" || st.Reachable != 2 {
		t.Errorf("one node down: status %d, %+v; want 0, still held, node %d unreachable with an error", code, st, spare+1)
	}
	lab.Kill(t, (spare+1)%3)
	if code, st = statusJSON(t, nodes, "jobs"); code != exitUnavailable || st.Held {
		t.Errorf("two nodes down: status %d, held %v; want %d, not held", code, st.Held, exitUnavailable)
	}
}

// setLock writes the lock of key "table" on c as the library does: owner, holds,
// lease and fencing counter.
func setLock(t *testing.T, c redis.UniversalClient, owner string, holds int, fence int64) {
	t.Helper()
	ctx := context.Background()
	lockKey, fenceKey := lockKeys(redlock.DefaultPrefix, "table")
	args := []any{"owner", owner}
	for h := range holds {
		args = append(args, fmt.Sprintf("h:%d", h), 1)
	}
	if err := c.HSet(ctx, lockKey, args...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(ctx, lockKey, 60e9).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, fenceKey, fence, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStatusTable(t *testing.T) {
	lab, nodes := startLab(t, 3)
	addrs, clients := lab.Addrs(), lab.Clients(t)
	code, stdout, stderr := inProcess("status", "--nodes", nodes, "--key", "table")
	if code != 0 || !strings.Contains(stdout, "free: no node holds the lock (3 of 3 nodes answered)") {
		t.Errorf("free lock: status %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	setLock(t, clients[0], "OWNERA", 2, 7)
	setLock(t, clients[1], "OWNERA", 2, 7)
	setLock(t, clients[2], "OWNERB", 1, 3)
	var out, errOut strings.Builder
	c := &cli{stdout: &out, stderr: &errOut, getenv: func(k string) string { return map[string]string{envNodes: nodes}[k] }}
	if code := c.main([]string{"status", "--key", "table"}); code != 0 { // the nodes from the environment
		t.Fatalf("status %d, stderr:\n%s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`lock quorumlock:\{table\} \(fence quorumlock:\{table\}:fence\)`,
		`NODE +STATE +OWNER +TTL +HOLDS +FENCE +ERROR`,
		regexp.QuoteMeta(addrs[0]) + ` +held +OWNERA +(59|60)(\.\d+)?s +2 +7 +-`,
		regexp.QuoteMeta(addrs[1]) + ` +held +OWNERA +(59|60)(\.\d+)?s +2 +7 +-`,
		regexp.QuoteMeta(addrs[2]) + ` +held +OWNERB +(59|60)(\.\d+)?s +1 +3 +-`,
		`held: owner OWNERA on 2 of 3 nodes \(a majority is 2\)`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !regexp.MustCompile("^" + w + "$").MatchString(lines[i]) {
			t.Errorf("line %d = %q, want %q", i, lines[i], w)
		}
	}
	owner, fence := strings.Index(lines[1], "OWNER"), strings.Index(lines[1], "FENCE")
	for _, line := range lines[2:5] {
		if !strings.HasPrefix(line[owner:], "OWNER") || !strings.ContainsAny(line[fence:fence+1], "37") {
			t.Errorf("line %q not aligned with the header %q", line, lines[1])
		}
	}
}

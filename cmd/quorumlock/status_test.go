package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// statusJSON runs status --json in-process, with more flags, and decodes
// its output.
func statusJSON(t *testing.T, nodes, key string, more ...string) (int, *lockStatus) {
	t.Helper()
	code, stdout, stderr := inProcess(append([]string{"status", "--nodes", nodes, "--key", key, "--json"}, more...)...)
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
	if code != 0 || st.Held != yes || st.State != stateHeld || st.Holders < 2 || st.Need != 2 || st.Reachable != 3 || st.Owner == "" {
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
		// A granting node's counter is the token, or was written back to it,
		// or — a grant from the node's clock — is within half the TTL (one
		// minute: holdLock) of it, needing no write-back (docs/SAFETY.md,
		// "Tokens without a write-back round").
		if n.Fence >= l.Token()-int64((30*time.Second).Microseconds()) {
			fenced++
		}
	}
	if fenced < st.Need {
		t.Errorf("%d nodes have a fence within half the TTL of the token %d or above, want a majority (%d)", fenced, l.Token(), st.Need)
	}

	lab.Kill(t, spare)
	code, st = statusJSON(t, nodes, "jobs")
	if down := st.Nodes[spare]; code != 0 || st.Held != yes || down.Reachable || down.Error == "" || st.Reachable != 2 {
		t.Errorf("one node down: status %d, %+v; want 0, still held, node %d unreachable with an error", code, st, spare+1)
	}
	lab.Kill(t, (spare+1)%3)
	// One node of three answered, whatever it holds: whether a
	// majority holds it, or has readers, is unknown — not false, not 0.
	code, stdout, _ := inProcess("status", "--nodes", nodes, "--key", "jobs", "--json")
	for _, want := range []string{`"held": "unknown"`, `"state": "unknown"`, `"readers": "unknown"`} {
		if code != exitUnavailable || !strings.Contains(stdout, want) {
			t.Errorf("two nodes down: status %d, JSON lacks %s:\n%s", code, want, stdout)
		}
	}
	code, stdout, _ = inProcess("status", "--nodes", nodes, "--key", "jobs")
	if code != exitUnavailable || !strings.Contains(stdout, "readers: unknown: only 1 of 3 nodes answered") ||
		!strings.Contains(stdout, "unknown: only 1 of 3 nodes answered") {
		t.Errorf("two nodes down: status %d, the table claims to know:\n%s", code, stdout)
	}
}

// setLock writes the lock of key "table" on c as the library does: owner, holds,
// lease and fencing counter.
func setLock(t *testing.T, c redis.UniversalClient, owner string, holds int, fence int64) {
	t.Helper()
	ctx := context.Background()
	names := redlock.Keys(redlock.DefaultPrefix, "table")
	args := []any{"owner", owner}
	for h := range holds {
		args = append(args, fmt.Sprintf("h:%d", h), 1)
	}
	if err := c.HSet(ctx, names.Lock, args...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(ctx, names.Lock, 60e9).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, names.Fence, fence, 0).Err(); err != nil {
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
		`NODE +STATE +OWNER +TTL +HOLDS +FENCE +READERS +UP +GUARD +ERROR`,
		regexp.QuoteMeta(addrs[0]) + ` +held +OWNERA +(59|60)(\.\d+)?s +2 +7 +0 +\d+[ms0-9]*s +vouched +-`,
		regexp.QuoteMeta(addrs[1]) + ` +held +OWNERA +(59|60)(\.\d+)?s +2 +7 +0 +\d+[ms0-9]*s +vouched +-`,
		regexp.QuoteMeta(addrs[2]) + ` +held +OWNERB +(59|60)(\.\d+)?s +1 +3 +0 +\d+[ms0-9]*s +vouched +-`,
		`held: owner OWNERA on 2 of 3 nodes \(a majority is 2\)`,
		`readers: 0 on a majority of nodes \(quorumlock:\{table\}:readers\)`,
		`restart guard 1m0s: 3 of 3 masters count \(up that long, or vouched for\)`, // the lock records no TTL: MaxRestartGuard
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
	for _, line := range lines[2:5] { // the node lines
		if !strings.HasPrefix(line[owner:], "OWNER") || !strings.ContainsAny(line[fence:fence+1], "37") {
			t.Errorf("line %q not aligned with the header %q", line, lines[1])
		}
	}
}

// addReaders adds members to key's readers on c, each with a lease ending
// after left (negative: ended) on the node's clock.
func addReaders(t *testing.T, c redis.UniversalClient, key string, left time.Duration, members ...string) {
	t.Helper()
	ctx := context.Background()
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		z := redis.Z{Score: float64(now.Add(left).UnixMilli()), Member: m}
		if err := c.ZAdd(ctx, redlock.Keys(redlock.DefaultPrefix, key).Readers, z).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStatusReaders(t *testing.T) {
	lab, nodes := startLab(t, 3)
	clients := lab.Clients(t)
	addReaders(t, clients[0], "doc", time.Minute, "o1 h1", "o2 h2", "o4 h4")
	addReaders(t, clients[1], "doc", time.Minute, "o1 h1", "o2 h2")
	addReaders(t, clients[2], "doc", time.Minute, "o1 h1", "o3 h3")
	addReaders(t, clients[2], "doc", -time.Second, "o2 h2") // its lease on node 3 ended

	code, st := statusJSON(t, nodes, "doc")
	if code != 0 || st.Readers.n != 2 || st.ReadersKey != "quorumlock:{doc}:readers" || st.Held != no || st.State != stateShared {
		t.Errorf("status %d, %v readers in %q, writer held %v; want 0, 2 readers (o1, o2) in quorumlock:{doc}:readers, no writer",
			code, st.Readers, st.ReadersKey, st.Held)
	}
	for i, want := range []int{3, 2, 2} {
		if got := st.Nodes[i].Readers; got != want {
			t.Errorf("node %d: %d live readers, want %d", i, got, want)
		}
	}
	code, stdout, _ := inProcess("status", "--nodes", nodes, "--key", "doc")
	if code != 0 || !strings.Contains(stdout, "readers: 2 on a majority of nodes (quorumlock:{doc}:readers)") {
		t.Errorf("status %d, table without the readers:\n%s", code, stdout)
	}
	if !strings.Contains(stdout, "shared: no writer, 2 readers on a majority of nodes") || strings.Contains(stdout, "free") {
		t.Errorf("two readers hold the key, yet the table does not say so:\n%s", stdout)
	}
}

// setPermit writes permit i of semaphore "pool" on c as the library does,
// and the limit its holders were granted with.
func setPermit(t *testing.T, c redis.UniversalClient, i int, owner string, fence int64, limit int) {
	t.Helper()
	ctx := context.Background()
	names := redlock.PermitKeys(redlock.DefaultPrefix, "pool", i)
	if err := c.HSet(ctx, names.Lock, "owner", owner, "h:0", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(ctx, names.Lock, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, names.Fence, fence, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, redlock.LimitKey(redlock.DefaultPrefix, "pool"), limit, 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStatusSemaphore(t *testing.T) {
	lab, nodes := startLab(t, 3)
	addrs, clients := lab.Addrs(), lab.Clients(t)
	setPermit(t, clients[0], 1, "OWNERA", 4, 2)
	setPermit(t, clients[1], 1, "OWNERA", 4, 2)
	queue := redlock.PermitKeys(redlock.DefaultPrefix, "pool", 0).Queue
	for _, c := range clients[:2] {
		if err := c.ZAdd(context.Background(), queue, redis.Z{Score: 1, Member: "waiter"}).Err(); err != nil {
			t.Fatal(err)
		}
	}

	code, st := statusJSON(t, nodes, "pool", "--limit", "2")
	s := st.Semaphore
	if code != 0 || s == nil || s.Held != 1 || len(s.Permits) != 2 || len(s.Nodes) != 3 {
		t.Fatalf("status %d, semaphore %+v; want 0 and 1 of 2 permits held over 3 nodes", code, s)
	}
	for i, want := range []semaphoreNode{{addrs[0], true, "", 2, 1}, {addrs[1], true, "", 2, 1}, {addrs[2], true, "", 0, 0}} {
		if s.Nodes[i] != want {
			t.Errorf("semaphore node %d: %+v, want %+v", i, s.Nodes[i], want)
		}
	}
	if p := s.Permits[0]; p.Held != no || p.Owner != "" || p.Nodes[0].Fence != 0 {
		t.Errorf("permit 0: %+v; want free, never granted", p)
	}
	if p := s.Permits[1]; p.Held != yes || p.Owner != "OWNERA" || p.Holders != 2 || p.Nodes[1].Fence != 4 || p.Nodes[1].Holds != 1 || p.Nodes[2].Owner != "" {
		t.Errorf("permit 1: %+v; want held by OWNERA on nodes 1 and 2", p)
	}

	code, stdout, stderr := inProcess("status", "--nodes", nodes, "--key", "pool", "--limit", "2")
	if code != 0 {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "semaphore ") })
	if start < 0 {
		t.Fatalf("no semaphore in the table:\n%s", stdout)
	}
	want := []string{
		`semaphore "pool", limit 2: 1 of 2 permits held \(limit quorumlock:\{pool\}:permits:limit, waiters quorumlock:\{pool\}:permits:queue\)`,
		`NODE +LIMIT +WAITERS`,
		regexp.QuoteMeta(addrs[0]) + ` +2 +1`,
		regexp.QuoteMeta(addrs[1]) + ` +2 +1`,
		regexp.QuoteMeta(addrs[2]) + ` +- +0`,
		``,
		`PERMIT +NODE +STATE +OWNER +TTL +HOLDS +FENCE`,
		`0 +` + regexp.QuoteMeta(addrs[0]) + ` +free +- +- +- +0`,
		`0 +` + regexp.QuoteMeta(addrs[1]) + ` +free +- +- +- +0`,
		`0 +` + regexp.QuoteMeta(addrs[2]) + ` +free +- +- +- +0`,
		`1 +` + regexp.QuoteMeta(addrs[0]) + ` +held +OWNERA +(59|60)(\.\d+)?s +1 +4`,
		`1 +` + regexp.QuoteMeta(addrs[1]) + ` +held +OWNERA +(59|60)(\.\d+)?s +1 +4`,
		`1 +` + regexp.QuoteMeta(addrs[2]) + ` +free +- +- +- +0`,
		`permit 0: free: no node holds the lock \(3 of 3 nodes answered\)`,
		`permit 1: held: owner OWNERA on 2 of 3 nodes \(a majority is 2\)`,
		``,
	}
	if got := lines[start:]; len(got) != len(want) {
		t.Fatalf("got %d lines of semaphore, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !regexp.MustCompile("^" + w + "$").MatchString(lines[start+i]) {
			t.Errorf("line %d = %q, want %q", start+i, lines[start+i], w)
		}
	}
}

// A node whose answer has an error after an absent key's nil (the free
// writer) is reported with the error, not read as free.
func TestStatusErrorAfterNil(t *testing.T) {
	lab, nodes := startLab(t, 3)
	c := lab.Clients(t)[2]
	if err := c.Set(context.Background(), redlock.Keys(redlock.DefaultPrefix, "odd").Readers, "not a sorted set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	code, st := statusJSON(t, nodes, "odd")
	if n := st.Nodes[2]; code != 0 || n.Reachable || !strings.Contains(n.Error, "WRONGTYPE") || st.Reachable != 2 {
		t.Errorf("status %d, node 3 %+v, %d reachable; want 0, node 3 with the WRONGTYPE error, 2 reachable", code, n, st.Reachable)
	}
}

// status shows each master's age against the restart guard, and whether
// trust vouched for it: brand-new masters are not counted yet.
func TestStatusShowsTheRestartGuard(t *testing.T) {
	lab := redislab.Start(t, 3) // not vouched for
	nodes := strings.Join(lab.Addrs(), ",")
	code, stdout, _ := inProcess("status", "--nodes", nodes, "--key", "g", "--restart-guard", "1h")
	if code != 0 || !strings.Contains(stdout, "only 0 of 3 masters count yet") || !strings.Contains(stdout, "quorumlock trust") ||
		!regexp.MustCompile(`\d+m\d+s left`).MatchString(stdout) {
		t.Errorf("status %d on new masters, guard 1h; want each one's time left and what to do:\n%s", code, stdout)
	}
	lab.Trust(t, redlock.TrustStart)
	code, st := statusJSON(t, nodes, "g", "--restart-guard", "1h")
	for i, n := range st.Nodes {
		if !n.Vouched || n.GuardLeftMillis != 0 || n.RunID == "" {
			t.Errorf("node %d after trust: %+v; want vouched, nothing left", i, n.masterAge)
		}
	}
	if code != 0 || st.Guard == nil || st.Guard.Counted != 3 || st.Guard.WaitMillis != 0 {
		t.Errorf("status %d, guard %+v after trust; want 3 counted, no wait", code, st.Guard)
	}
}

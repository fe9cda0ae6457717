package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A gate keeps the commands of runs inside their hold until the test opens
// it. Each command records its arrival, with its $QUORUMLOCK_ variables, as
// a file in the gate's directory; none leaves before the gate opens, so
// arrivals seen together were inside together.
type gate string

func newGate(t *testing.T) gate { return gate(t.TempDir()) }

// argv returns the command that arrives at g and waits for it to open.
func (g gate) argv() []string {
	const script = `env | grep '^QUORUMLOCK_' > "$0/.in.$$" && mv "$0/.in.$$" "$0/in.$$"
until [ -e "$0/open" ]; do sleep 0.01; done`
	return []string{"sh", "-c", script, string(g)}
}

// await waits until n commands have arrived at g, and returns their
// environments.
func (g gate) await(t *testing.T, n int) []map[string]string {
	t.Helper()
	var arrived []string
	testkit.Eventually(t, 20*time.Second, strconv.Itoa(n)+" commands inside at once", func() bool {
		arrived, _ = filepath.Glob(filepath.Join(string(g), "in.*"))
		return len(arrived) >= n
	})
	envs := make([]map[string]string, len(arrived))
	for i, path := range arrived {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			k, v, _ := strings.Cut(line, "=")
			envs[i][k] = v
		}
	}
	return envs
}

// open lets every command at g, and every later one, go.
func (g gate) open(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(string(g), "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// kindArgs starts the arguments of a run on nodes, with the node timeout of
// runArgs, for the hold that more names.
func kindArgs(nodes string, more ...string) []string {
	return append([]string{"run", "--nodes", nodes, "--node-timeout", "200ms"}, more...)
}

// withCmd returns args, then "--" and argv.
func withCmd(args []string, argv ...string) []string {
	return append(append(append([]string{}, args...), "--"), argv...)
}

// heldBy returns the owner of key's lock on a majority of lab's nodes, or "".
func heldBy(t *testing.T, lab *redislab.Lab, key string) string {
	t.Helper()
	got := owners(t, lab, key)
	a := agree(got, quorum.Majority(len(got)), len(got))
	if a.Held != yes {
		return ""
	}
	return a.Owner
}

func TestRunKeys(t *testing.T) {
	lab, nodes := startLab(t, 3)
	g := newGate(t)
	first := start(t, "", withCmd(kindArgs(nodes, "--keys", "a,b,c"), g.argv()...)...)
	env := g.await(t, 1)[0]

	owner := heldBy(t, lab, "a")
	for _, k := range []string{"a", "b", "c"} {
		if got := heldBy(t, lab, k); got == "" || got != owner {
			t.Errorf("key %s held by %q on a majority, want the owner of a, %q", k, got, owner)
		}
	}
	m := regexp.MustCompile(`^a=([1-9][0-9]*),b=([1-9][0-9]*),c=([1-9][0-9]*)$`).FindStringSubmatch(env[envTokens])
	if m == nil || env[envKey] != "a,b,c" {
		t.Fatalf("the command's environment %q; want %s a,b,c and %s a=T,b=T,c=T", env, envKey, envTokens)
	}
	largest := 0
	for _, tok := range m[1:] {
		largest = max(largest, mustAtoi(t, tok))
	}
	if env[envToken] != strconv.Itoa(largest) || env[envPermit] != "" {
		t.Errorf("%s=%s, %s=%q; want the largest token %d and no permit", envToken, env[envToken], envPermit, env[envPermit], largest)
	}

	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--keys", "c,d"}, `locks "c", "d" not obtained`},
		{[]string{"--keys", "d,a"}, `locks "d", "a" not obtained`},
		{[]string{"--key", "b"}, `lock "b" not obtained`},
	} {
		code, _, stderr := runBinary(t, "", withCmd(kindArgs(nodes, tc.flags...), "true")...)
		if code != exitTempFail || !strings.Contains(stderr, tc.want) {
			t.Errorf("run %v while a,b,c are held: status %d, stderr %q; want %d and %q", tc.flags, code, stderr, exitTempFail, tc.want)
		}
	}
	if got := owners(t, lab, "d"); strings.Join(got, "") != "" {
		t.Errorf("a refused run --keys left part of its keys held: owners of d %q", got)
	}

	g.open(t)
	if code := first.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("run --keys a,b,c: status %d; stderr:\n%s", code, first.stderr.String())
	}
	for _, k := range []string{"a", "b", "c"} {
		if got := owners(t, lab, k); strings.Join(got, "") != "" {
			t.Errorf("key %s left held after run: owners %q", k, got)
		}
	}
	if code, _, stderr := runBinary(t, "", withCmd(kindArgs(nodes, "--keys", "d,c"), "true")...); code != 0 {
		t.Errorf("run --keys d,c once released: status %d; stderr:\n%s", code, stderr)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRunRead(t *testing.T) {
	_, nodes := startLab(t, 3)
	g := newGate(t)
	read := kindArgs(nodes, "--key", "doc", "--read")
	readers := []*proc{start(t, "", withCmd(read, g.argv()...)...), start(t, "", withCmd(read, g.argv()...)...)}
	g.await(t, 2) // both commands inside at once

	code, _, stderr := runBinary(t, "", withCmd(kindArgs(nodes, "--key", "doc", "--wait", "0"), "true")...)
	if code != exitTempFail || !strings.Contains(stderr, `lock "doc" not obtained`) {
		t.Errorf("writer while two readers hold: status %d, stderr %q; want %d", code, stderr, exitTempFail)
	}
	if code, st := statusJSON(t, nodes, "doc"); code != 0 || st.Readers.n != 2 || st.Held != no {
		t.Errorf("status while two readers hold: %d, %v readers, writer held %v; want 0, 2 readers, no writer", code, st.Readers, st.Held)
	}

	g.open(t)
	for i, p := range readers {
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Errorf("reader %d: status %d; stderr:\n%s", i, code, p.stderr.String())
		}
	}
	if code, _, stderr := runBinary(t, "", withCmd(kindArgs(nodes, "--key", "doc"), "true")...); code != 0 {
		t.Errorf("writer once the readers left: status %d; stderr:\n%s", code, stderr)
	}
}

func TestRunLimit(t *testing.T) {
	_, nodes := startLab(t, 3)
	g := newGate(t)
	pool := kindArgs(nodes, "--key", "pool", "--limit", "2")
	holders := []*proc{start(t, "", withCmd(pool, g.argv()...)...), start(t, "", withCmd(pool, g.argv()...)...)}
	envs := g.await(t, 2) // both commands inside at once

	permits := map[string]bool{}
	for _, env := range envs {
		permits[env[envPermit]] = true
		if env[envKey] != "pool" || mustAtoi(t, env[envToken]) < 1 {
			t.Errorf("a holder's environment %q; want %s pool and a positive token", env, envKey)
		}
	}
	if !permits["0"] || !permits["1"] {
		t.Errorf("the holders' %s: %v; want 0 and 1", envPermit, permits)
	}

	code, _, stderr := runBinary(t, "", withCmd(append(pool, "--wait", "0"), "true")...)
	if code != exitTempFail || !strings.Contains(stderr, `a permit of "pool" (limit 2) not obtained`) {
		t.Errorf("a third holder: status %d, stderr %q; want %d", code, stderr, exitTempFail)
	}
	code, _, stderr = runBinary(t, "", withCmd(kindArgs(nodes, "--key", "pool", "--limit", "3"), "true")...)
	if code != exitUsage || !strings.Contains(stderr, "limit 2, not 3") {
		t.Errorf("--limit 3 while held with 2: status %d, stderr %q; want %d", code, stderr, exitUsage)
	}

	waiter := start(t, "", withCmd(append(pool, "--wait", "30s"), "true")...)
	var st *lockStatus
	testkit.Eventually(t, 20*time.Second, "status showing the waiter in line", func() bool {
		code, st = statusJSON(t, nodes, "pool", "--limit", "2")
		return code == 0 && waitersOnMajority(st.Semaphore) >= 1
	})
	checkSemaphore(t, st.Semaphore, 2)

	g.open(t)
	for i, p := range append(holders, waiter) {
		if code := p.wait(t, 30*time.Second); code != 0 {
			t.Errorf("run %d: status %d; stderr:\n%s", i, code, p.stderr.String())
		}
	}
	if _, st = statusJSON(t, nodes, "pool", "--limit", "2"); st.Semaphore.Held != 0 {
		t.Errorf("%d permits held after every run ended, want 0", st.Semaphore.Held)
	}
}

// waitersOnMajority returns the number of waiters that a majority of s's
// nodes has at least.
func waitersOnMajority(s *semaphore) int64 {
	counts := make([]int64, len(s.Nodes))
	for i, n := range s.Nodes {
		counts[i] = n.Waiters
	}
	slices.Sort(counts)
	return counts[len(counts)-len(counts)/2-1]
}

// checkSemaphore checks the view of semaphore "pool" while two runs hold
// both of its permits, with limit.
func checkSemaphore(t *testing.T, s *semaphore, limit int) {
	t.Helper()
	if s.Name != "pool" || s.Limit != limit || s.Held != limit || len(s.Permits) != limit ||
		s.LimitKey != redlock.LimitKey(redlock.DefaultPrefix, "pool") || s.QueueKey != redlock.PermitKeys(redlock.DefaultPrefix, "pool", 0).Queue {
		t.Fatalf("semaphore %+v; want pool, limit %d, every permit held, the library's names", s, limit)
	}
	recorded := 0
	for _, n := range s.Nodes {
		if n.Reachable && n.Limit == int64(limit) {
			recorded++
		}
	}
	if recorded < 2 {
		t.Errorf("the limit %d recorded on %d nodes, want a majority: %+v", limit, recorded, s.Nodes)
	}
	owners := map[string]bool{}
	for i, p := range s.Permits {
		names := redlock.PermitKeys(redlock.DefaultPrefix, "pool", i)
		if p.Permit != i || p.LockKey != names.Lock || p.FenceKey != names.Fence || p.Held != yes || p.Holders < 2 || owners[p.Owner] {
			t.Errorf("permit %d: %+v; want its names, held on a majority by an owner of its own", i, p)
		}
		owners[p.Owner] = true
		for n, h := range p.Nodes {
			if h.Owner == p.Owner && (h.TTLMillis <= 0 || h.Holds != 1 || h.Fence <= 0) {
				t.Errorf("permit %d, node %d: %+v; want a TTL, 1 hold, a fence", i, n, h)
			}
		}
	}
}

func TestChildEnv(t *testing.T) {
	parent := []string{"HOME=/root", envKey + "=outer", envToken + "=9", envTokens + "=a=1,b=9", envPermit + "=3", "QUORUMLOCK_NODES=n:1"}
	got := childEnv(parent, []string{envKey + "=inner", envToken + "=4"})
	want := []string{"HOME=/root", "QUORUMLOCK_NODES=n:1", envKey + "=inner", envToken + "=4"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q: a nested run passes on only its own hold", got, want)
	}
}

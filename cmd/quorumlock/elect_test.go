package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// electionClient returns a library Client over lab's nodes, closed with t.
func electionClient(t *testing.T, lab *redislab.Lab) *redlock.Client {
	t.Helper()
	return testkit.Open(t, redlock.New, lab.Clients(t), redlock.WithNodeTimeout(time.Second))
}

// elect runs CMD while leading: the leader is recorded with its value and
// term ($QUORUMLOCK_TERM) while CMD runs, CMD's exit status is elect's, and
// the leadership is resigned when it exits.
func TestElectRunsWhileLeading(t *testing.T) {
	lab, nodes := startLab(t, 3)
	c := electionClient(t, lab)
	binary(t) // built before the clock starts
	ctx := testkit.Context(t, 30*time.Second)
	gate := t.TempDir() + "/go"
	p := start(t, "", "elect", "--nodes", nodes, "--name", "sched", "--value", "host a", "--node-timeout", "200ms", "--",
		"sh", "-c", fmt.Sprintf(`echo "term=$QUORUMLOCK_TERM token=$QUORUMLOCK_TOKEN"; while [ ! -e %s ]; do sleep 0.05; done; exit 7`, gate))
	testkit.Eventually(t, 10*time.Second, "the command running", func() bool { return strings.Contains(p.stdout.String(), "term=") })
	m := regexp.MustCompile(`term=([1-9][0-9]*) token=([0-9]+)`).FindStringSubmatch(p.stdout.String())
	if m == nil || m[1] != m[2] {
		t.Fatalf("stdout %q: want term=T token=T", p.stdout.String())
	}
	ld, err := c.Leader(ctx, "sched")
	if err != nil || ld.Value != "host a" || fmt.Sprint(ld.Term) != m[1] {
		t.Fatalf("Leader = %+v, %v; want host a at term %s", ld, err, m[1])
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 10*time.Second); code != 7 {
		t.Errorf("elect exited %d, want the command's 7; stderr:\n%s", code, p.stderr.String())
	}
	if ld, err := c.Leader(ctx, "sched"); !errors.Is(err, redlock.ErrNoLeader) {
		t.Errorf("Leader after elect = %+v, %v; want ErrNoLeader (resigned)", ld, err)
	}
}

// elect waits in line while another leads, and runs CMD as soon as it
// resigns, with a larger term.
func TestElectWaitsForTheLeader(t *testing.T) {
	lab, nodes := startLab(t, 3)
	c := electionClient(t, lab)
	ctx := testkit.Context(t, 30*time.Second)
	l, err := c.Campaign(ctx, "sched", "first")
	if err != nil {
		t.Fatal(err)
	}
	p := startWaiter(t, lab, []string{"elect", "--nodes", nodes, "--name", "sched", "--node-timeout", "200ms", "--",
		"sh", "-c", `echo "$QUORUMLOCK_TERM"`})
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	resigned := time.Now()
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("elect exited %d; stderr:\n%s", code, p.stderr.String())
	}
	t.Logf("elect took over and ran in %v", time.Since(resigned))
	var term int64
	if _, err := fmt.Sscan(p.stdout.String(), &term); err != nil || term <= l.Token() {
		t.Errorf("term %q, want larger than the first leader's %d", p.stdout.String(), l.Token())
	}
}

func TestElectBadUsage(t *testing.T) {
	big := strings.Repeat("v", redlock.MaxLeaderValue+1)
	for _, args := range [][]string{
		{"elect", "--nodes", "127.0.0.1:1", "--", "true"},
		{"elect", "--nodes", "127.0.0.1:1", "--name", "n"},
		{"elect", "--nodes", "127.0.0.1:1", "--name", "n", "--value", big, "--", "true"},
		{"elect", "--nodes", "127.0.0.1:1", "--name", "n", "--wait", "-1s", "--", "true"},
		// The bounds run has: a --wait past redlock.MaxDuration overflowed
		// the deadline, a --ttl past maxTTL the fencing retention.
		{"elect", "--nodes", "127.0.0.1:1", "--name", "n", "--wait", "2562047h47m16.8s", "--", "true"},
		{"elect", "--nodes", "127.0.0.1:1", "--name", "n", "--ttl", "4381h", "--", "true"},
		{"elect", "--name", "n", "--", "true"},
		{"leader", "--nodes", "127.0.0.1:1"},
		{"leader", "--nodes", "127.0.0.1:1", "--name", "n", "extra"},
	} {
		code, _, stderr := inProcess(args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 2 {
			t.Errorf("%q: status %d, stderr %q; want %d and one line with a pointer to -h", args[:min(len(args), 6)], code, stderr, exitUsage)
		}
	}
}

// leader prints the leader's term and value, exits 3 when nobody leads,
// and with --watch prints each new leader until interrupted.
func TestLeaderPrintsAndWatches(t *testing.T) {
	lab, nodes := startLab(t, 3)
	c := electionClient(t, lab)
	ctx := testkit.Context(t, 30*time.Second)
	args := []string{"leader", "--nodes", nodes, "--name", "sched", "--node-timeout", "200ms"}
	if code, stdout, stderr := runBinary(t, "", args...); code != exitNoLeader || stdout != "" {
		t.Fatalf("no leader: status %d, stdout %q; want %d and nothing; stderr:\n%s", code, stdout, exitNoLeader, stderr)
	}
	l, err := c.Campaign(ctx, "sched", "a b")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%d a b\n", l.Token())
	if code, stdout, stderr := runBinary(t, "", args...); code != 0 || stdout != want {
		t.Fatalf("status %d, stdout %q; want 0, %q; stderr:\n%s", code, stdout, want, stderr)
	}
	p := start(t, "", append(args, "--watch")...)
	testkit.Eventually(t, 10*time.Second, "the current leader printed", func() bool { return p.stdout.String() == want })
	l.Unlock(ctx)
	l2, err := c.Campaign(ctx, "sched", "c")
	if err != nil {
		t.Fatal(err)
	}
	want += fmt.Sprintf("%d c\n", l2.Token())
	testkit.Eventually(t, 5*time.Second, "the new leader printed", func() bool { return p.stdout.String() == want })
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("--watch interrupted: status %d, want 0; stderr:\n%s", code, p.stderr.String())
	}
	l2.Unlock(context.Background())
}

// status counts a leader's hold once: the term and value that mark a
// leadership in the lock's hash are no holds.
func TestStatusOfALeadership(t *testing.T) {
	lab, nodes := startLab(t, 3)
	c := electionClient(t, lab)
	l, err := c.Campaign(testkit.Context(t, 10*time.Second), "lead-status", "host a")
	if err != nil {
		t.Fatal(err)
	}
	code, st := statusJSON(t, nodes, "lead-status")
	if code != 0 || st.Held != yes {
		t.Fatalf("status %d, %+v; want 0, held", code, st)
	}
	for i, n := range st.Nodes {
		if n.Owner == st.Owner && n.Holds != 1 {
			t.Errorf("node %d: %d holds of the leadership (token %d), want 1", i, n.Holds, l.Token())
		}
	}
}

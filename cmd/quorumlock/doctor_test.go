package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// doctorArgs are doctor's flags in tests: a short clock sample and a node
// timeout that a loaded machine meets (its p99 PING included), then args.
func doctorArgs(nodes string, args ...string) []string {
	return append([]string{"doctor", "--nodes", nodes, "--clock-sample", "300ms", "--node-timeout", "1s"}, args...)
}

// A clean lab passes every check: exit 0 and an ok verdict.
func TestDoctorCleanLabExitsZero(t *testing.T) {
	_, nodes := startLab(t, 3)
	code, stdout, stderr := runBinary(t, "", doctorArgs(nodes)...)
	if code != exitOK || !strings.Contains(stdout, "verdict: ok") || strings.Contains(stdout, "\nfail ") {
		t.Fatalf("doctor on a clean lab: status %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// rtt and clock may warn on a loaded machine; they never fail here.
	for _, check := range []string{"role", "eviction", "persistence", "acl", "start"} {
		if want := "ok   node 2 (" + strings.Split(nodes, ",")[2] + ") " + check + ": "; !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// A master evicting keys, a replica and one server given twice are each
// named on their own line, by node number, and doctor exits 1.
func TestDoctorNamesMisconfiguredMasters(t *testing.T) {
	lab, _ := startLab(t, 3)
	clients := lab.Clients(t)
	ctx := testkit.Context(t, 20*time.Second)
	clients[1].ConfigSet(ctx, "maxmemory", "100mb")
	if err := clients[1].ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(lab.Nodes[0].Addr(), ":")
	if err := clients[2].SlaveOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { clients[2].SlaveOf(context.Background(), "NO", "ONE") })
	nodes := strings.Join(append(lab.Addrs(), "localhost:"+port), ",")
	code, stdout, _ := runBinary(t, "", doctorArgs(nodes, "--clock-sample", "0")...)
	if code != exitFailure || !strings.Contains(stdout, "verdict: fail") {
		t.Fatalf("doctor: status %d, want %d; stdout:\n%s", code, exitFailure, stdout)
	}
	for _, want := range []string{
		"fail node 1 (" + lab.Nodes[1].Addr() + ") eviction: maxmemory-policy allkeys-lru",
		"fail node 2 (" + lab.Nodes[2].Addr() + ") role: role:slave",
		"fail node 3 (localhost:" + port + ") same-server: the same server as node 0",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// --json prints one document: every finding and the verdict.
func TestDoctorJSON(t *testing.T) {
	lab, nodes := startLab(t, 3)
	if err := lab.Clients(t)[0].ConfigSet(testkit.Context(t, 5*time.Second), "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBinary(t, "", doctorArgs(nodes, "--json", "--clock-sample", "0")...)
	var doc struct {
		Findings []struct {
			Node                            int
			Addr, Check, Severity, Got, Why string
		}
		Reachable, Need int
		Verdict         string
		Warnings        int
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if code != exitOK || doc.Verdict != "ok" || doc.Reachable != 3 || doc.Need != 2 || doc.Warnings < 1 {
		t.Errorf("status %d, verdict %q, reachable %d, need %d, warnings %d; want 0, ok, 3, 2, ≥1", code, doc.Verdict, doc.Reachable, doc.Need, doc.Warnings)
	}
	found := false
	for _, f := range doc.Findings {
		found = found || f.Node == 0 && f.Check == "persistence" && f.Severity == "warn" && strings.Contains(f.Got, "appendonly no")
	}
	if !found {
		t.Errorf("no persistence warning for node 0 in %+v", doc.Findings)
	}
}

// Fewer than a majority answering is exit 69; bad flags exit 2.
func TestDoctorExitStatuses(t *testing.T) {
	_, nodes := startLab(t, 1)
	dead := make([]string, 2)
	for i := range dead {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead[i] = ln.Addr().String()
		ln.Close()
	}
	code, stdout, _ := runBinary(t, "", doctorArgs(nodes+","+strings.Join(dead, ","), "--clock-sample", "0")...)
	if code != exitUnavailable || !strings.Contains(stdout, "verdict: unavailable: only 1 of 3 nodes answered") {
		t.Errorf("doctor with 2 of 3 nodes down: status %d, want %d; stdout:\n%s", code, exitUnavailable, stdout)
	}
	for _, args := range [][]string{
		{"doctor"},
		{"doctor", "--nodes", nodes, "extra"},
		{"doctor", "--nodes", nodes, "--clock-sample", "-1s"},
		{"doctor", "--nodes", nodes, "--ttl", "0"},
		{"doctor", "--nodes", nodes, "--drift-factor", "2"},
	} {
		if code, _, stderr := inProcess(args...); code != exitUsage || !strings.HasPrefix(stderr, "quorumlock doctor: ") {
			t.Errorf("%q: status %d, want %d; stderr %q", args, code, exitUsage, stderr)
		}
	}
}

// doctor's help lists its flags and exit statuses; the tool's lists doctor.
func TestDoctorHelp(t *testing.T) {
	code, stdout, stderr := inProcess("help", "doctor")
	if code != exitOK || stderr != "" {
		t.Fatalf("help doctor: status %d, stderr %q", code, stderr)
	}
	for _, w := range []string{"-clock-sample duration", "-drift-factor float", "-node-timeout duration", "-json", "69", "Examples:"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("doctor's usage lacks %q:\n%s", w, stdout)
		}
	}
	if strings.Contains(stdout, flagsMarker) {
		t.Errorf("usage still has %s", flagsMarker)
	}
	if _, stdout, _ := inProcess("help"); !strings.Contains(stdout, "quorumlock doctor --nodes") {
		t.Errorf("the tool's usage does not list doctor:\n%s", stdout)
	}
}

package main

import (
	"strings"
	"testing"
)

// demoTable returns the value column of the demo's final table by row name.
func demoTable(t *testing.T, stdout string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		name, rest, _ := strings.Cut(line, "  ")
		rows[name] = strings.Fields(rest)[0]
	}
	for _, name := range []string{"sold", "stock left", "oversold", "overlaps", "locks lost", "wait p50", "wait p99", "verdict"} {
		if rows[name] == "" {
			t.Fatalf("no %q row in:\n%s", name, stdout)
		}
	}
	return rows
}

// checkDemo fails t unless the demo passed with nothing oversold and no
// overlap, and its faults' events all happened.
func checkDemo(t *testing.T, code int, stdout, stderr string, events ...string) {
	t.Helper()
	rows := demoTable(t, stdout)
	if code != 0 || rows["verdict"] != "OK" || rows["oversold"] != "0" || rows["lost updates"] != "0" ||
		rows["overlaps"] != "0" || rows["sold"] == "0" {
		t.Fatalf("status %d; want 0, something sold, none oversold, no overlap:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, e := range events {
		if !strings.Contains(stdout, e) {
			t.Errorf("table lacks %q:\n%s", e, stdout)
		}
	}
	if !strings.Contains(stderr, "sold ") {
		t.Errorf("no progress line on stderr:\n%s", stderr)
	}
}

// shortDemo times a short demo whose events all happen — node killed at
// 0.8s and restarted at 1.35s; from 1s, the crashing process waits its turn
// behind two buyers (about 0.5s), holds 0.75s, and its lease expires within
// 0.5s of the crash — with a node timeout that the embedded nodes meet under
// the race detector on a loaded machine.
var shortDemo = []string{"--duration", "4s", "--ttl", "500ms", "--node-timeout", "100ms", "--workers", "2"}

func TestDemoEmbedded(t *testing.T) {
	code, stdout, stderr := inProcess(append([]string{"demo"}, shortDemo...)...)
	checkDemo(t, code, stdout, stderr, "restarted empty at", "renewed", "a buyer took over")
}

func TestDemoOnNodes(t *testing.T) {
	_, nodes := startLab(t, 5)
	code, stdout, stderr := runBinary(t, "", append([]string{"demo", "--nodes", nodes, "--stock", "20"}, shortDemo...)...)
	checkDemo(t, code, stdout, stderr, "renewed", "a buyer took over")
	if rows := demoTable(t, stdout); rows["sold"] != "20" || rows["stock left"] != "0" {
		t.Errorf("sold %s, left %s; want 20 sold out", rows["sold"], rows["stock left"])
	}
}

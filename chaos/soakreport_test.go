package chaos_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/history"
)

var soakReport = flag.String("soak.report", "", "TestSoak draws its run on this HTML `file`, its history beside it (.jsonl)")

// A drawnFault is how the report draws a kind of the soak's faults: its
// history kind, whether it hits the masters pick chose or, moving from
// master to master (or cutting clients off), every one, and whether its
// healing restarts the masters empty.
type drawnFault struct {
	kind       string
	everyNode  bool
	emptyAfter bool
}

var drawnFaults = map[string]drawnFault{
	"crash, delayed empty restart":    {kind: history.FaultKill, emptyAfter: true},
	"crash, immediate restarts (AOF)": {kind: history.FaultRestart, everyNode: true},
	"crash, immediate empty restarts": {kind: history.FaultRestartEmpty, everyNode: true},
	"masters paused (SIGSTOP)":        {kind: history.FaultFreeze},
	"majority down (3 of 5 killed)":   {kind: history.FaultKill},
	"latency":                         {kind: history.FaultLatency},
	"blackhole":                       {kind: history.FaultFreeze},
	"lost replies":                    {kind: history.FaultPartition},
	"majority blinks (100–300 ms)":    {kind: history.FaultFreeze, everyNode: true},
	"master frozen at Close":          {kind: history.FaultFreeze},
	"partitioned clients":             {kind: history.FaultPartition, everyNode: true},
	// The split semaphore's shared master, restarted empty (permitSplit).
	"semaphore split, shared master restarted empty": {kind: history.FaultRestartEmpty},
}

// faultRecords returns the episodes as fault records: one per master an
// episode hit (one for every master when it moved among them), and after
// a delayed empty restart the restart guard, one lease long, that the
// restarted masters sit out.
func faultRecords(rec *chaos.Recorder, episodes []episode, nodes []string, lease time.Duration) []history.Record {
	var out []history.Record
	for _, e := range episodes {
		d, ok := drawnFaults[e.kind]
		if !ok {
			d = drawnFault{kind: e.kind, everyNode: true}
		}
		hit := []string{""}
		if !d.everyNode && len(e.nodes) > 0 {
			hit = hit[:0]
			for _, n := range e.nodes {
				hit = append(hit, nodes[n])
			}
		}
		for _, node := range hit {
			out = append(out, history.Record{Type: history.TypeFault, Time: rec.Instant(e.from), End: rec.Instant(e.to),
				Node: node, Fault: d.kind, Note: e.kind})
			if d.emptyAfter {
				out = append(out, history.Record{Type: history.TypeFault, Time: rec.Instant(e.to), End: rec.Instant(e.to + lease),
					Node: node, Fault: history.FaultRestartEmpty, Note: "restarted empty: sits out the restart guard"})
			}
		}
	}
	return out
}

// writeReport writes the soak's history to path's .jsonl and draws it on
// path, and logs both paths.
func (s *soak) writeReport(t *testing.T, path string, writes []chaos.Write) {
	nodes := make([]string, len(s.lab.Nodes))
	for i, a := range s.lab.Addrs() {
		nodes[i] = fmt.Sprintf("master %d (%s)", i+1, a)
	}
	rec := s.w.rec
	run := history.Record{Type: history.TypeRun, Time: rec.Instant(0), End: rec.Instant(rec.Now()),
		Title: fmt.Sprintf("chaos soak, seed %d", *soakSeed), Nodes: nodes}
	recs := rec.Records(writes, append([]history.Record{run}, faultRecords(rec, s.episodes, nodes, ttl)...)...)
	page, err := filepath.Abs(path)
	if err != nil {
		t.Errorf("report: %v", err)
		return
	}
	jsonl, err := history.Save(page, recs)
	if err != nil {
		t.Errorf("report: %v", err)
		return
	}
	t.Logf("report: %s (history %s)", page, jsonl)
}

// TestSoakFaultsDrawn: every fault the soak can inject is drawn, one band
// per master it hit (one across all for those that move among them), and
// the delayed empty restart's guard after it.
func TestSoakFaultsDrawn(t *testing.T) {
	rec := chaos.NewRecorder()
	nodes := []string{"m1", "m2", "m3", "m4", "m5"}
	var episodes []episode
	want := 0
	for i, kind := range faultKinds() {
		e := episode{kind: kind, from: time.Duration(i) * time.Second, to: time.Duration(i)*time.Second + 500*time.Millisecond,
			nodes: []int{i % 5, (i + 2) % 5}}
		episodes = append(episodes, e)
		d, ok := drawnFaults[kind]
		if !ok {
			t.Errorf("fault %q has no drawing", kind)
		}
		n := 1
		if !d.everyNode {
			n = len(e.nodes)
		}
		if d.emptyAfter {
			n *= 2
		}
		want += n
	}
	recs := faultRecords(rec, episodes, nodes, ttl)
	if len(recs) != want {
		t.Errorf("%d fault records, want %d", len(recs), want)
	}
	page := renderRecords(t, recs)
	if got := drawn(page, "fault"); got != want {
		t.Errorf("%d faults drawn, want %d", got, want)
	}
	kinds := map[string]bool{}
	for _, r := range recs {
		kinds[r.Fault] = true
	}
	for _, k := range []string{history.FaultKill, history.FaultRestartEmpty, history.FaultRestart, history.FaultFreeze,
		history.FaultLatency, history.FaultPartition} {
		if !kinds[k] {
			t.Errorf("no %s fault drawn", k)
		}
	}
}

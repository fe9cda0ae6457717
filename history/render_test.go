package history_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/history"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// sample is a small run: five nodes, a fault of every kind, clean holds of
// two keys by three clients (one lost, one still held), fenced writes.
func sample() []history.Record {
	recs := []history.Record{{Type: history.TypeRun, Time: at(0), End: at(3000), Title: "sample run",
		Nodes: []string{"node 1", "node 2", "node 3", "node 4", "node 5"}}}
	kinds := []string{history.FaultKill, history.FaultRestartEmpty, history.FaultRestart, history.FaultFreeze,
		history.FaultLatency, history.FaultPartition, history.FaultClockSkew}
	for i, k := range kinds {
		recs = append(recs, history.Record{Type: history.TypeFault, Time: at(100 + 350*i), End: at(400 + 350*i),
			Node: fmt.Sprintf("node %d", i%5+1), Fault: k})
	}
	recs = append(recs, history.Record{Type: history.TypeFault, Time: at(2600), End: at(2800), Fault: history.FaultPartition, Note: "clients cut off"})
	for i := range 6 {
		c := fmt.Sprintf("client %d", i%3)
		start, end := at(50+400*i), at(400+400*i)
		recs = append(recs,
			history.Record{Type: history.TypeGrant, Time: start, Client: c, Key: "stock", Token: int64(i + 1), Until: at(500 + 400*i)},
			history.Record{Type: history.TypeRelease, Time: end, Client: c, Key: "stock", Token: int64(i + 1), Until: at(500 + 400*i)},
			history.Record{Type: history.TypeWrite, Time: start.Add(time.Millisecond), Client: c, Key: "stock", Token: int64(i + 1)})
	}
	return append(recs,
		history.Record{Type: history.TypeGrant, Time: at(100), Client: "client 1", Key: "jobs", Token: 7, Until: at(600)},
		history.Record{Type: history.TypeLoss, Time: at(450), Client: "client 1", Key: "jobs", Token: 7, Until: at(600), Note: "lost"},
		history.Record{Type: history.TypeGrant, Time: at(700), Client: "client 2", Key: "jobs", Token: 8, Until: at(1200)})
}

func render(t *testing.T, recs []history.Record) string {
	t.Helper()
	var b bytes.Buffer
	if err := history.Render(&b, recs); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return b.String()
}

// count counts the SVG rectangles whose class attribute starts with the
// word class.
func count(page, class string) int {
	return len(regexp.MustCompile(`<rect class="`+regexp.QuoteMeta(class)+`[ "]`).FindAllStringIndex(page, -1))
}

func countType(recs []history.Record, typ string) int {
	n := 0
	for _, r := range recs {
		if r.Type == typ {
			n++
		}
	}
	return n
}

func TestRenderDrawsEveryHoldAndFault(t *testing.T) {
	recs := sample()
	page := render(t, recs)
	checks := []struct {
		class string
		want  int
	}{
		{"hold", countType(recs, history.TypeGrant)},
		{"fault", countType(recs, history.TypeFault)},
		{"after-loss", 1},
		{"hold lost", 1},
		{"hold open", 1},
		{"overlap", 0},
		{"write refused", 0},
		{"write", 6},
		{"lane", 5 + 2},
	}
	for _, c := range checks {
		if got := count(page, c.class); got != c.want {
			t.Errorf("%d rects of class %q drawn, want %d", got, c.class, c.want)
		}
	}
	for _, want := range []string{"sample run", ">stock<", ">jobs<", ">node 3<", "client 2", "clock-skew"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestRenderDrawsOverlapInRed injects a second holder of "stock" into a
// clean history: the picture must show one overlap, in red, where the two
// holds meet.
func TestRenderDrawsOverlapInRed(t *testing.T) {
	recs := append(sample(),
		history.Record{Type: history.TypeGrant, Time: at(200), Client: "intruder", Key: "stock", Token: 99, Until: at(700)},
		history.Record{Type: history.TypeRelease, Time: at(300), Client: "intruder", Key: "stock", Token: 99})
	page := render(t, recs)
	if got := count(page, "overlap"); got != 1 {
		t.Fatalf("%d overlaps drawn, want 1", got)
	}
	m := regexp.MustCompile(`<rect class="overlap" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"[^>]*><title>([^<]*)</title>`).FindStringSubmatch(page)
	if m == nil || !strings.Contains(m[3], "intruder") || !strings.Contains(m[3], "client 0") {
		t.Fatalf("overlap rect or its title not as expected: %q", m)
	}
	if !regexp.MustCompile(`\.overlap \{ fill: #d62728`).MatchString(page) {
		t.Error("overlaps are not styled red")
	}
	if got := count(page, "hold"); got != countType(recs, history.TypeGrant) {
		t.Errorf("%d holds drawn, want %d", got, countType(recs, history.TypeGrant))
	}
	// Two readers at once are no overlap.
	shared := append(sample(),
		history.Record{Type: history.TypeGrant, Time: at(10), Client: "r1", Key: "rw", Shared: true},
		history.Record{Type: history.TypeGrant, Time: at(20), Client: "r2", Key: "rw", Shared: true})
	if got := count(render(t, shared), "overlap"); got != 0 {
		t.Errorf("%d overlaps drawn for two readers, want 0", got)
	}
}

func TestRenderDrawsRefusedStaleWriteInRed(t *testing.T) {
	recs := append(sample(), history.Record{Type: history.TypeWrite, Time: at(900), Client: "paused", Key: "stock", Token: 1, Refused: true, Seen: 3})
	page := render(t, recs)
	if got := count(page, "write refused"); got != 1 {
		t.Fatalf("%d refused writes drawn, want 1", got)
	}
	if !strings.Contains(page, ".write.refused { fill: #d62728") {
		t.Error("refused writes are not styled red")
	}
	if !strings.Contains(page, "STALE WRITE REFUSED at 0.900s: paused wrote stock with token 1, the store had 3") {
		t.Error("refused write's hover text missing")
	}
}

// TestRenderIsSelfContained: nothing the page would fetch, and no script.
func TestRenderIsSelfContained(t *testing.T) {
	page := render(t, sample())
	page = strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"http:", "https:", "src=", "href", "url(", "<script", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
}

func TestRenderEscapesNames(t *testing.T) {
	recs := []history.Record{{Type: history.TypeGrant, Time: at(0), Client: `<b>"x"</b>`, Key: "<script>alert(1)</script>", Token: 1}}
	page := render(t, recs)
	if strings.Contains(page, "<script>alert") || strings.Contains(page, `<b>"x"`) {
		t.Error("names are not escaped")
	}
}

func TestRenderEmptyHistory(t *testing.T) {
	if page := render(t, nil); !strings.Contains(page, "0 holds") {
		t.Error("empty history: summary missing")
	}
}

package lab_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/history"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Scenario timing: each fault lasts longer than the holders' lease, so that
// leases granted before it expire during it.
const (
	holdTTL    = time.Second
	faultSpell = 4 * time.Second
	demoLength = 3 * time.Minute // outlasts the faults (SIGINT ends it); the stock outlasts it
	demoStock  = "100000000"
)

// On the compose lab of make lab (lab/run.sh), with the masters vouched for:
// buyers run under the lock through the toxiproxy ports — the CLI's demo and
// recorded holders of this test — while one fault at a time hits a minority,
// through compose: a master killed mid-lease and started again with its
// volume, another killed and brought back empty, a latency, a blackhole. The
// latency and the kills spare redis1, which keeps the demo's stock. The
// verdict: nothing oversold, no overlapping holds, no token regression, and
// the holders got the lock during every fault.
func TestComposeChaos(t *testing.T) {
	if os.Getenv("LAB_SCENARIO") == "" {
		t.Skip("the compose chaos scenario runs on the lab make lab brings up (LAB_SCENARIO unset)")
	}
	bin := os.Getenv("QUORUMLOCK_BIN")
	if bin == "" {
		t.Fatal("QUORUMLOCK_BIN must name a built quorumlock binary")
	}
	proxies := nodes(7101, 5)
	d := startDemo(t, bin, proxies)
	s := &scenario{t: t, lab: newComposeLab(t), h: startHolders(t, proxies, 3)}
	calm := hit{}
	s.phase("none (warm-up)", calm, s.calm)
	s.phase("redis2 killed mid-lease, started with its volume", hit{proxies[1], history.FaultKill}, s.killAndStart)
	s.phase("redis3 killed, its volume removed, back empty", hit{proxies[2], history.FaultRestartEmpty}, s.killEmpty)
	s.phase("none (redis3's grants sit out the restart guard)", calm, s.calm)
	s.phase("latency 300ms on redis4 (toxiproxy)", hit{proxies[3], history.FaultLatency}, s.latency)
	s.phase("blackhole on redis5 (toxiproxy timeout=0)", hit{proxies[4], history.FaultFreeze}, s.blackhole)
	s.phase("none (after the faults)", calm, s.calm)
	s.h.stop()
	s.report(proxies)
	rep := checkHolds(t, s.h.rec)
	oversold := d.verdict(t)
	t.Logf("VERDICT: %s oversold, %d overlapping holds, %d token regressions (%d holds checked)",
		oversold, len(rep.Overlaps), len(rep.Regressions), rep.Acquisitions)
}

// report draws the recorded holders' run, with its faults, on the page
// LAB_REPORT names (one self-contained HTML file, its history beside it),
// whatever the verdict, and prints where.
func (s *scenario) report(nodes []string) {
	page := os.Getenv("LAB_REPORT")
	if page == "" {
		return
	}
	run := history.Record{Type: history.TypeRun, Title: "make lab: the compose chaos scenario",
		Nodes: nodes, Time: s.h.rec.Instant(0), End: s.h.rec.Instant(s.h.rec.Now())}
	hist, err := history.Save(page, s.h.rec.Records(nil, append([]history.Record{run}, s.faults...)...))
	if err != nil {
		s.t.Errorf("the run's report: %v", err)
		return
	}
	s.t.Logf("report: %s (history %s)", page, hist)
}

// demo is the CLI's demo, run as a child process through the proxies.
type demo struct {
	cmd       *exec.Cmd
	out, errs bytes.Buffer
	exit      error
	done      chan struct{} // closed once the demo has exited (exit set)
}

// startDemo starts the demo with a stock that outlasts the scenario; it is
// killed in t.Cleanup if verdict did not end it.
func startDemo(t *testing.T, bin string, addrs []string) *demo {
	t.Helper()
	d := &demo{done: make(chan struct{})}
	d.cmd = exec.Command(bin, "demo", "--nodes", join(addrs), "--stock", demoStock,
		"--duration", demoLength.String(), "--workers", "4")
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.errs
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("starting the demo: %v", err)
	}
	go func() { d.exit = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { d.cmd.Process.Kill(); <-d.done })
	return d
}

var oversoldRow = regexp.MustCompile(`(?m)^oversold\s+(\d+)`)

// verdict ends the demo (SIGINT: it reports what it saw), checks its exit
// status is 0 and nothing was oversold, and returns the oversold count.
func (d *demo) verdict(t *testing.T) string {
	t.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Fatalf("the demo did not end\n%s", d.errs.String())
	}
	t.Logf("the demo's table:\n%s", d.out.String())
	m := oversoldRow.FindStringSubmatch(d.out.String())
	if d.exit != nil || m == nil || m[1] != "0" {
		t.Errorf("demo: %v, oversold row %q\n%s", d.exit, m, d.errs.String())
		return "?"
	}
	return m[1]
}

// holders takes the lock over and over through the proxies, each hold
// recorded for chaos.Check.
type holders struct {
	rec     *chaos.Recorder
	count   atomic.Int64
	holding atomic.Int32
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func startHolders(t *testing.T, addrs []string, n int) *holders {
	t.Helper()
	conns := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	client, err := redlock.New(conns, redlock.WithTTL(holdTTL), redlock.WithNodeTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	h := &holders{rec: chaos.NewRecorder(), cancel: cancel}
	t.Cleanup(h.stop)
	for i := range n {
		name := string(rune('A' + i))
		h.wg.Go(func() {
			for ctx.Err() == nil {
				l, err := client.Lock(ctx, "lab-chaos")
				if err != nil {
					continue
				}
				h.rec.Hold(ctx, name, l, func(ctx context.Context) {
					h.holding.Add(1)
					defer h.holding.Add(-1)
					select {
					case <-time.After(50 * time.Millisecond):
					case <-ctx.Done():
					}
				})
				h.count.Add(1)
			}
		})
	}
	return h
}

func (h *holders) stop() { h.cancel(); h.wg.Wait() }

// waitHolding waits until a holder holds the lock: the kill comes mid-lease.
func (h *holders) waitHolding(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for h.holding.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no holder held the lock within 30s")
		}
		time.Sleep(time.Millisecond)
	}
}

// markKey is written straight to a master before it is killed: whether it
// is there after the restart tells whether the master kept its data.
const markKey = "lab-chaos:mark"

func mark(t *testing.T, addr string) {
	t.Helper()
	withNode(t, addr, func(ctx context.Context, rdb *redis.Client) error {
		return rdb.Set(ctx, markKey, "before the kill", 0).Err()
	})
}

// marked checks that the master at addr came back with the mark (kept) or
// without it (empty), and says which.
func marked(t *testing.T, addr string, kept bool) string {
	t.Helper()
	var n int64
	withNode(t, addr, func(ctx context.Context, rdb *redis.Client) (err error) {
		n, err = rdb.Exists(ctx, markKey).Result()
		return err
	})
	switch {
	case kept && n == 1:
		return addr + " came back with the key written before the kill (append-only file on its volume)"
	case !kept && n == 0:
		return addr + " came back empty (new volume), its grants sitting out the restart guard"
	}
	t.Errorf("%s: the key written before the kill exists %d times after the restart; want kept %v", addr, n, kept)
	return addr + ": unexpected data after the restart"
}

// checkHolds checks the holders' history with chaos.Check and returns the report.
func checkHolds(t *testing.T, rec *chaos.Recorder) chaos.Report {
	t.Helper()
	rep := chaos.Check(rec.History())
	t.Logf("verdict of the holders: %d holds, %d overlapping, %d token regressions, %d losses signalled",
		rep.Acquisitions, len(rep.Overlaps), len(rep.Regressions), rep.Losses)
	if !rep.Safe() || rep.Acquisitions == 0 {
		t.Errorf("holders' history unsafe or empty:\n%s", rep.String())
	}
	return rep
}

func join(addrs []string) string { return strings.Join(addrs, ",") }

// firstLine is err's message up to its first line break.
func firstLine(err error) string {
	if err == nil {
		return "answered"
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

var (
	flagDur    = flag.Duration("bench.dur", 3*time.Second, "measured time of each library in each case")
	flagRounds = flag.Int("bench.rounds", 3, "cases (a), (b), (d): split -bench.dur into this many rounds, the libraries interleaved")
	flagWarm   = flag.Duration("bench.warm", 200*time.Millisecond, "warm-up before each measured run, same workers, other keys")
	flagFsync  = flag.String("bench.appendfsync", "no", `the masters' appendfsync: "no" measures the clients and the round trips; "always" is the lab's redis.conf (fsync bound)`)
	flagMax    = flag.Int64("bench.max", 1_000_000, "most cycles started in one run, whatever the duration")
	flagHold   = flag.Duration("bench.hold", 2*time.Millisecond, "case (c): how long each holder keeps the lock")
	flagSlow   = flag.Duration("bench.slow", 20*time.Millisecond, "case (d): reply latency added to one master")
	flagCases  = flag.String("bench.cases", "abcd", "cases to run, a subset of abcd")
	flagOnly   = flag.String("bench.only", "", "regexp: run only the libraries whose table name matches (e.g. to profile one)")
	flagAlloc  = flag.Bool("bench.allocs", true, "measure allocations per cycle with testing.Benchmark (column allocs/cyc)")
	flagMix    = flag.Bool("bench.cmdmix", false, "after the table, print the commands the servers ran per cycle, by library")
	// The p99 wait of case (c) that issue 10 must not exceed: quorumlock's at
	// commit 75624c4 (docs/BENCH.md), the last run before issue 10.
	flagP99Before = flag.Duration("bench.p99before", 31*time.Millisecond, "case (c): the p99 wait issue 10 must not exceed (the last run before it)")
)

// The five masters of the lab, as in DESIGN.md.
const labNodes = 5

// Case (b) and (c) concurrency, from issue 5; (b) at 64 workers from issue
// 26, where only batching per master gets past the floor.
const (
	distinctWorkers = 16
	manyWorkers     = 64
	oneKeyWorkers   = 8
)

// TestSideBySide starts the five-node lab and prints one table of every
// library in every case, all measured in this run on this lab. It measures;
// it does not judge: targets missed are reported, not failed.
func TestSideBySide(t *testing.T) {
	lab := startLab(t)
	nodes := lab.Clients(t)
	only, err := regexp.Compile(*flagOnly)
	if err != nil {
		t.Fatalf("bench: -bench.only: %v", err)
	}
	subjects := keep(only, []subject{
		floorSubject(nodes),
		quorumlockSubject(t, nameQLNoRenew, nodes, redlock.WithAutoRenew(false)),
		quorumlockSubject(t, nameQL, nodes),
		redsyncSubject(nodes),
		redislockSubject(nodes[0]),
	})
	m := &measurer{t: t, servers: nodes}
	load := loadavg()
	var rows []row
	if strings.Contains(*flagCases, "a") {
		rows = append(rows, m.uncontended("(a) 1 worker, fresh keys", 1, subjects)...)
	}
	if strings.Contains(*flagCases, "b") {
		rows = append(rows, m.uncontended("(b) 16 workers, distinct keys", distinctWorkers, subjects)...)
		rows = append(rows, m.uncontended("(b) 64 workers, distinct keys", manyWorkers, subjects)...)
	}
	if strings.Contains(*flagCases, "c") {
		rows = append(rows, m.oneKey("(c) 8 workers, one key", oneKeyWorkers, subjects)...)
	}
	if strings.Contains(*flagCases, "d") {
		rows = append(rows, m.slowNode(lab, only)...)
	}
	if *flagAlloc {
		allocs(t, nodes, only, rows)
	}
	fmt.Fprintf(os.Stdout, "\nquorumlock bench: %d masters on loopback, %v per run (+%v warm-up), GOMAXPROCS=%d\n",
		labNodes, *flagDur, *flagWarm, runtime.GOMAXPROCS(0))
	fmt.Fprintf(os.Stdout, "masters' appendfsync %s; load average before %s, after %s (other work on the machine skews every figure)\n\n",
		*flagFsync, load, loadavg())
	printTable(os.Stdout, rows)
	if *flagMix {
		printCommandMix(os.Stdout, rows)
	}
	printTargets(os.Stdout, rows)
}

// startLab starts the five masters with -bench.appendfsync.
func startLab(t testing.TB) *redislab.Lab {
	lab := redislab.Start(t, labNodes, redislab.WithArgs("--appendfsync", *flagFsync))
	lab.Trust(t, redlock.TrustStart)
	// A master's LASTSAVE is relied on once seen two seconds old (whole
	// seconds of its clock); until then every grant reports the server's
	// start in full — an INFO on the server, some 40 allocations more per
	// cycle on the client — and whatever is measured first pays for it
	// (issue 26: "renew off", benchmarked first, read 212–250 allocations
	// per cycle against the default's 137–183). Users' masters are older.
	time.Sleep(3 * time.Second)
	return lab
}

// loadavg returns the 1-minute load average, or "?".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func keep(only *regexp.Regexp, ss []subject) []subject {
	var out []subject
	for _, s := range ss {
		if only.MatchString(s.name) {
			out = append(out, s)
		}
	}
	return out
}

// A measurer runs the cases on one lab.
type measurer struct {
	t       *testing.T
	servers []redis.UniversalClient // asked for their CPU time; never proxied
	seq     atomic.Int64            // makes every run's keys fresh
}

// measure warms up, then runs b with n workers for dur, each run on its own
// keys.
func (m *measurer) measure(n int, dur time.Duration, b func(prefix string) body) outcome {
	ctx := context.Background()
	run(ctx, n, *flagWarm, *flagMax, nil, b(m.prefix()))
	o := run(ctx, n, dur, *flagMax, m.servers, b(m.prefix()))
	if errs, _, first := o.errs(); errs > 0 {
		m.t.Logf("bench: %d errors, first: %v", errs, first)
	}
	return o
}

// interleaved measures every subject for -bench.dur in all, in
// -bench.rounds rounds whose order rotates, so that a drift of the machine
// during the case falls on every library alike.
func (m *measurer) interleaved(name string, n int, subjects []subject, b func(s subject) func(prefix string) body) []row {
	rounds := max(1, *flagRounds)
	outs := make([]outcome, len(subjects))
	for r := range rounds {
		for k := range subjects {
			i := (k + r) % len(subjects)
			outs[i] = outs[i].merge(m.measure(n, *flagDur/time.Duration(rounds), b(subjects[i])))
		}
	}
	rows := make([]row, len(subjects))
	for i, s := range subjects {
		rows[i] = row{cas: name, lib: s.name, o: outs[i]}
	}
	return rows
}

func (m *measurer) prefix() string { return "bench:" + strconv.FormatInt(m.seq.Add(1), 10) + ":" }

// uncontended is cases (a), (b) and (d): n workers, each cycle TryLock and
// Unlock of a key no one else uses; the latency is the acquire.
func (m *measurer) uncontended(name string, n int, subjects []subject) []row {
	return m.interleaved(name, n, subjects, func(s subject) func(string) body {
		return func(prefix string) body {
			return func(ctx context.Context, _ time.Time, w, i int) (time.Duration, error) {
				key := prefix + strconv.Itoa(w) + ":" + strconv.Itoa(i)
				t0 := time.Now()
				rel, err := s.try(ctx, key)
				d := time.Since(t0)
				if err != nil {
					return d, err
				}
				return d, rel(ctx)
			}
		}
	})
}

// oneKey is case (c): n workers take turns on one key with each library's
// blocking acquire, and hold it for -bench.hold. The latency is the wait,
// from wanting the lock to holding it, across a library's give-ups (redsync
// returns ErrFailed after 32 tries; the worker keeps waiting). One
// uninterrupted run per library: rounds would hide a starved worker.
//
// Every worker asks again as soon as it released, so a fair lock makes each
// wait for the n−1 others: mean wait ≈ (n−1)·(hold + handoff), 14 ms or more
// here. A short p99 wait and a high min/max cannot both be had; the note
// "free per handoff" gives the handoff cost itself.
func (m *measurer) oneKey(name string, n int, subjects []subject) []row {
	var rows []row
	for _, s := range subjects {
		if s.wait == nil {
			continue
		}
		var gaveUp, held atomic.Int64 // of the last run: the measured one
		o := m.measure(n, *flagDur, func(prefix string) body {
			gaveUp.Store(0)
			held.Store(0)
			key := prefix + "one"
			return func(ctx context.Context, end time.Time, _, _ int) (time.Duration, error) {
				wctx, cancel := context.WithDeadline(ctx, end)
				defer cancel()
				t0 := time.Now()
				for {
					rel, err := s.wait(wctx, key)
					if err == nil {
						t1 := time.Now()
						time.Sleep(*flagHold)
						held.Add(int64(time.Since(t1)))
						return t1.Sub(t0), rel(ctx)
					}
					if wctx.Err() != nil {
						return time.Since(t0), errCut
					}
					gaveUp.Add(1)
				}
			}
		})
		r := row{cas: name, lib: s.name, o: o, wait: true}
		// The lock is held by one worker at a time; the rest of the run it
		// is free while handed over: the release, then the next acquire.
		if c := o.cycles(); c > 0 {
			idle := (o.elapsed - time.Duration(held.Load())) / time.Duration(c)
			r.note = fmt.Sprintf("free %s per handoff", ms(idle))
		}
		if g := gaveUp.Load(); g > 0 {
			r.note += fmt.Sprintf("; gave up %d×, retried", g)
		}
		rows = append(rows, r)
	}
	return rows
}

// slowNode is case (d): one worker on fresh keys, node 0 reached through a
// proxy, first at +0 then at +bench.slow reply latency, so that the proxy's
// own cost cancels in the ratio.
func (m *measurer) slowNode(lab *redislab.Lab, only *regexp.Regexp) []row {
	proxy := faultproxy.Start(m.t, lab.Nodes[0].Addr())
	nodes := lab.Clients(m.t, func(o *redis.Options) {
		if o.Addr == lab.Nodes[0].Addr() {
			o.Addr = proxy.Addr()
		}
	})
	subjects := keep(only, []subject{
		quorumlockSubject(m.t, nameQLNoRenew, nodes, redlock.WithAutoRenew(false)),
		quorumlockSubject(m.t, nameQL, nodes),
		redsyncSubject(nodes),
	})
	var rows []row
	for _, lat := range []time.Duration{0, *flagSlow} {
		proxy.SetLatency(0, lat)
		name := fmt.Sprintf("(d) node 0 +%v via proxy", lat)
		rows = append(rows, m.uncontended(name, 1, subjects)...)
	}
	proxy.SetLatency(0, 0)
	return rows
}

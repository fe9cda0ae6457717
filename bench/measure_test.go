package bench

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// errCut marks a wait that the end of a run cut short: its latency so far is
// recorded as a lower bound, so that an unfair library's longest waits are
// not simply dropped from its p99.
var errCut = errors.New("bench: wait cut short by the end of the run")

// A body runs one cycle of worker w and returns the latency to record (the
// acquire, or the wait). end is when the run stops starting cycles; ctx
// outlives it by a grace period so that cycles in flight can finish.
type body func(ctx context.Context, end time.Time, w, i int) (time.Duration, error)

// A worker is one worker's record of a run.
type worker struct {
	lat    []time.Duration // one per completed or cut cycle
	cycles int             // completed cycles
	cut    int             // waits cut short at the end (errCut)
	errs   int
	err    error // the first error
}

// An outcome is the record of one run: its workers, its wall time, and the
// CPU the client process and the servers spent during it.
type outcome struct {
	workers    []worker
	elapsed    time.Duration
	clientCPU  time.Duration
	server     serverStat // during the run
	serverSeen bool       // server was read from every node
}

// grace is how long cycles in flight at the end of a run may take.
const grace = 5 * time.Second

// run starts n workers that call b until dur has passed or max cycles were
// started in all, and returns what they recorded. servers, when given, are
// asked for their CPU time before and after.
func run(ctx context.Context, n int, dur time.Duration, max int64, servers []redis.UniversalClient, b body) outcome {
	var started atomic.Int64
	ws := make([]worker, n)
	cpu0 := processCPU()
	srv0, ok0 := serversStat(ctx, servers)
	start := time.Now()
	end := start.Add(dur)
	ctx, cancel := context.WithDeadline(ctx, end.Add(grace))
	defer cancel()
	var wg sync.WaitGroup
	for w := range ws {
		wg.Go(func() {
			rec := &ws[w]
			for i := 0; time.Now().Before(end) && started.Add(1) <= max; i++ {
				d, err := b(ctx, end, w, i)
				switch {
				case errors.Is(err, errCut):
					rec.cut++
					rec.lat = append(rec.lat, d)
				case err != nil:
					rec.errs++
					if rec.err == nil {
						rec.err = err
					}
				default:
					rec.cycles++
					rec.lat = append(rec.lat, d)
				}
			}
		})
	}
	wg.Wait()
	o := outcome{workers: ws, elapsed: time.Since(start), clientCPU: processCPU() - cpu0}
	srv1, ok1 := serversStat(ctx, servers)
	o.server = srv1.minus(srv0)
	o.serverSeen = ok0 && ok1
	return o
}

// merge returns o and p as one outcome, worker by worker.
func (o outcome) merge(p outcome) outcome {
	for len(o.workers) < len(p.workers) {
		o.workers = append(o.workers, worker{})
	}
	for i, w := range p.workers {
		to := &o.workers[i]
		to.lat = append(to.lat, w.lat...)
		to.cycles, to.cut, to.errs = to.cycles+w.cycles, to.cut+w.cut, to.errs+w.errs
		if to.err == nil {
			to.err = w.err
		}
	}
	first := o.elapsed == 0
	o.elapsed += p.elapsed
	o.clientCPU += p.clientCPU
	o.server = o.server.plus(p.server)
	o.serverSeen = p.serverSeen && (first || o.serverSeen)
	return o
}

// cycles returns the completed cycles of all workers.
func (o *outcome) cycles() int {
	n := 0
	for _, w := range o.workers {
		n += w.cycles
	}
	return n
}

func (o *outcome) rate() float64 { return float64(o.cycles()) / o.elapsed.Seconds() }

// quantile returns the q-quantile (nearest rank) of every recorded latency.
func (o *outcome) quantile(q float64) time.Duration {
	var all []time.Duration
	for _, w := range o.workers {
		all = append(all, w.lat...)
	}
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	i := int(q*float64(len(all))+0.5) - 1
	return all[min(max(i, 0), len(all)-1)]
}

// spread returns the fewest and most cycles completed by one worker.
func (o *outcome) spread() (lo, hi int) {
	lo = -1
	for _, w := range o.workers {
		if lo < 0 || w.cycles < lo {
			lo = w.cycles
		}
		hi = max(hi, w.cycles)
	}
	return lo, hi
}

func (o *outcome) errs() (n, cut int, first error) {
	for _, w := range o.workers {
		n, cut = n+w.errs, cut+w.cut
		if first == nil {
			first = w.err
		}
	}
	return n, cut, first
}

// perCycle divides a CPU time by the completed cycles.
func (o *outcome) perCycle(d time.Duration) time.Duration {
	if c := o.cycles(); c > 0 {
		return d / time.Duration(c)
	}
	return 0
}

// processCPU returns the user plus system time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A serverStat is what the servers report of themselves, summed.
type serverStat struct {
	cpu      time.Duration    // used_cpu_sys + used_cpu_user: main and background threads
	commands int64            // total_commands_processed
	calls    map[string]int64 // calls per command (INFO commandstats), scripts' own calls included
}

// minus returns s − t.
func (s serverStat) minus(t serverStat) serverStat {
	d := serverStat{cpu: s.cpu - t.cpu, commands: s.commands - t.commands, calls: map[string]int64{}}
	for k, v := range s.calls {
		if v -= t.calls[k]; v != 0 {
			d.calls[k] = v
		}
	}
	return d
}

// plus returns s + t.
func (s serverStat) plus(t serverStat) serverStat {
	d := serverStat{cpu: s.cpu + t.cpu, commands: s.commands + t.commands, calls: map[string]int64{}}
	for _, m := range []map[string]int64{s.calls, t.calls} {
		for k, v := range m {
			d.calls[k] += v
		}
	}
	return d
}

// serversStat reads INFO cpu and stats of every server, and reports whether
// every one answered. The INFO calls themselves count as commands; with
// thousands of cycles per run they are noise.
func serversStat(ctx context.Context, servers []redis.UniversalClient) (serverStat, bool) {
	st := serverStat{calls: map[string]int64{}}
	for _, s := range servers {
		info, err := s.Info(ctx, "cpu", "stats", "commandstats").Result()
		if err != nil {
			return serverStat{}, false
		}
		for line := range strings.Lines(info) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			switch k {
			case "used_cpu_sys", "used_cpu_user":
				sec, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return serverStat{}, false
				}
				st.cpu += time.Duration(sec * float64(time.Second))
			case "total_commands_processed":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return serverStat{}, false
				}
				st.commands += n
			}
			if cmd, ok := strings.CutPrefix(k, "cmdstat_"); ok {
				calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
				n, _ := strconv.ParseInt(calls, 10, 64)
				st.calls[cmd] += n
			}
		}
	}
	return st, len(servers) > 0
}

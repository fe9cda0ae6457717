package bench

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A cycle acquires key in one attempt and releases it, calling the library
// directly, so that allocations per cycle are the library's own (plus
// go-redis's), not the harness's.
type cycle func(ctx context.Context, key string) error

// cycles returns one cycle per library, by table name, over nodes.
func cycles(t testing.TB, nodes []redis.UniversalClient) map[string]cycle {
	f := floor{nodes}
	qlOff := newQuorumlock(t, nodes, redlock.WithAutoRenew(false))
	ql := newQuorumlock(t, nodes)
	rs := newRedsync(nodes)
	rl := redislock.New(nodes[0])
	qlCycle := func(c *redlock.Client) cycle {
		return func(ctx context.Context, key string) error {
			l, err := c.TryLock(ctx, key)
			if err != nil {
				return err
			}
			return l.Unlock(ctx)
		}
	}
	return map[string]cycle{
		nameFloor: func(ctx context.Context, key string) error {
			if err := f.lock(ctx, key); err != nil {
				return err
			}
			return f.unlock(ctx, key)
		},
		nameQLNoRenew: qlCycle(qlOff),
		nameQL:        qlCycle(ql),
		nameRedsync: func(ctx context.Context, key string) error {
			m := rs.NewMutex(key)
			if err := m.TryLockContext(ctx); err != nil {
				return err
			}
			_, err := m.UnlockContext(ctx)
			return err
		},
		nameRedislock: func(ctx context.Context, key string) error {
			l, err := rl.Obtain(ctx, key, redislockTTL, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		},
	}
}

// keyRing is how many keys one goroutine of a benchmark cycles through: by
// the time a key comes back, its last release has long landed everywhere.
const keyRing = 256

var ringSeq atomic.Int64

// ring returns keyRing fresh keys, built before the timed loop.
func ring() []string {
	id := ringSeq.Add(1)
	keys := make([]string, keyRing)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:cycle:%d:%d", id, i)
	}
	return keys
}

// benchSequential runs c back to back on one goroutine.
func benchSequential(b *testing.B, c cycle) {
	ctx, keys := context.Background(), ring()
	for i := range 100 { // warm the pools and the script caches
		_ = c(ctx, keys[i%keyRing])
	}
	var fails failures
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		fails.add(c(ctx, keys[i%keyRing]))
	}
	fails.report(b)
}

// benchParallel runs c on about 16 goroutines (16 rounded down to a multiple
// of GOMAXPROCS), each on its own keys, as in case (b).
func benchParallel(b *testing.B, c cycle) {
	b.SetParallelism(max(1, distinctWorkers/runtime.GOMAXPROCS(0)))
	var fails failures
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx, keys := context.Background(), ring()
		for i := 0; pb.Next(); i++ {
			fails.add(c(ctx, keys[i%keyRing]))
		}
	})
	fails.report(b)
}

// failures counts failed cycles: on a loaded machine a per-node timeout
// may expire, and a benchmark reports that (fails/op) rather than stopping.
type failures struct {
	n     atomic.Int64
	first atomic.Pointer[error]
}

func (f *failures) add(err error) {
	if err != nil {
		f.n.Add(1)
		f.first.CompareAndSwap(nil, &err)
	}
}

func (f *failures) report(b *testing.B) {
	if n := f.n.Load(); n > 0 {
		b.ReportMetric(float64(n)/float64(b.N), "fails/op")
		b.Logf("%d of %d cycles failed, first: %v", n, b.N, *f.first.Load())
	}
}

// benchLab starts one five-node lab and benchmarks the named libraries on it.
func benchLab(b *testing.B, names ...string) {
	lab := startLab(b)
	cs := cycles(b, lab.Clients(b))
	for _, name := range names {
		sub := strings.NewReplacer(" ", "", "(", "", ")", "", "v4", "").Replace(name)
		b.Run(sub+"/seq", func(b *testing.B) { benchSequential(b, cs[name]) })
		b.Run(sub+"/par16", func(b *testing.B) { benchParallel(b, cs[name]) })
	}
}

func BenchmarkFloorCycle(b *testing.B) { benchLab(b, nameFloor) }

func BenchmarkQuorumlockCycle(b *testing.B) { benchLab(b, nameQLNoRenew, nameQL) }

func BenchmarkRedsyncCycle(b *testing.B) { benchLab(b, nameRedsync) }

func BenchmarkRedislockCycle(b *testing.B) { benchLab(b, nameRedislock) }

// allocs fills in the allocations per cycle of case (a)'s rows, measured
// with testing.Benchmark of the same sequential cycle the Benchmarks run.
func allocs(t *testing.T, nodes []redis.UniversalClient, only *regexp.Regexp, rows []row) {
	cs := cycles(t, nodes)
	for i := range rows {
		r := &rows[i]
		if !strings.HasPrefix(r.cas, "(a)") || !only.MatchString(r.lib) {
			continue
		}
		res := testing.Benchmark(func(b *testing.B) { benchSequential(b, cs[r.lib]) })
		r.allocs, r.hasAllocs = res.AllocsPerOp(), true
	}
}

package autopipe_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// benchCmds are the commands of the benchmarks, on a node with the lab's
// settings: a small write, as a lock's script is (each event loop of the
// server that wrote ends with an fsync: appendfsync always), and a read.
var benchCmds = [][]any{{"incr", "bench"}, {"get", "bench"}}

// benchLab starts the benchmarks' node, with the key they read.
func benchLab(b *testing.B) *redislab.Lab {
	lab := redislab.Start(b, 1)
	if err := lab.Clients(b)[0].Set(context.Background(), "bench", 0, 0).Err(); err != nil {
		b.Fatal(err)
	}
	return lab
}

// BenchmarkDo compares one caller's Do through a Pipe with rdb.Do; held: a
// Pipe over a client that never retries, whose sender holds its connection;
// lone: a Pipe that writes a lone call by Process (WithLoneProcess).
func BenchmarkDo(b *testing.B) {
	lab := benchLab(b)
	rdb, held := lab.Clients(b)[0], lab.Clients(b, noRetries)[0]
	for _, cmd := range benchCmds {
		b.Run(fmt.Sprintf("%s/plain", cmd[0]), func(b *testing.B) { benchSequential(b, rdb.Do, cmd) })
		b.Run(fmt.Sprintf("%s/pipe", cmd[0]), func(b *testing.B) { benchSequential(b, newPipe(b, rdb).Do, cmd) })
		b.Run(fmt.Sprintf("%s/pipe-held", cmd[0]), func(b *testing.B) { benchSequential(b, newPipe(b, held).Do, cmd) })
		b.Run(fmt.Sprintf("%s/pipe-lone", cmd[0]), func(b *testing.B) {
			benchSequential(b, newPipe(b, lab.Clients(b)[0], autopipe.WithLoneProcess()).Do, cmd)
		})
	}
}

func benchSequential(b *testing.B, do func(context.Context, ...any) *redis.Cmd, cmd []any) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := do(ctx, cmd...).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoParallel compares 16 concurrent callers through a Pipe, with 1,
// 2 and 4 batches in flight, with rdb.Do: on loopback, for a write (INCR:
// each event loop of the server ends with an fsync) and a read (GET); and for
// the write through a proxy that adds latency (SetLatency 0.5 ms each way,
// about 2.5 ms per round trip with the proxy's timer granularity).
func BenchmarkDoParallel(b *testing.B) {
	lab := benchLab(b)
	for _, link := range []string{"loopback", "proxy"} {
		addr := lab.Addrs()[0]
		if link == "proxy" {
			fp := faultproxy.Start(b, addr)
			fp.SetLatency(500*time.Microsecond, 500*time.Microsecond)
			addr = fp.Addr()
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		held := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		b.Cleanup(func() { rdb.Close(); held.Close() })
		for _, cmd := range benchCmds {
			if link == "proxy" && cmd[0] == "get" {
				continue
			}
			name := fmt.Sprintf("%s/%s", link, cmd[0])
			b.Run(name+"/plain", func(b *testing.B) { benchParallel(b, rdb.Do, nil, cmd) })
			b.Run(name+"/pipe-held/inflight=1", func(b *testing.B) {
				p := newPipe(b, held)
				benchParallel(b, p.Do, p, cmd)
			})
			for _, n := range []int{1, 2, 4} {
				b.Run(fmt.Sprintf("%s/pipe/inflight=%d", name, n), func(b *testing.B) {
					p := newPipe(b, rdb, autopipe.WithMaxInFlight(n))
					benchParallel(b, p.Do, p, cmd)
				})
			}
		}
	}
}

// benchParallel runs do from 16 goroutines; with p, it also reports the
// mean batch size.
func benchParallel(b *testing.B, do func(context.Context, ...any) *redis.Cmd, p *autopipe.Pipe, cmd []any) {
	const callers = 16
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	ctx := context.Background()
	var before autopipe.Stats
	if p != nil {
		before = p.Stats()
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := do(ctx, cmd...).Err(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if p != nil {
		s := p.Stats()
		if batches := s.Batches - before.Batches; batches > 0 {
			b.ReportMetric(float64(s.Sent-before.Sent)/float64(batches), "calls/batch")
		}
	}
}

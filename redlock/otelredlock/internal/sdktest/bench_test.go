package otelredlock_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
	"github.com/seed818c56a1/quorumlock/redlock/otelredlock"
)

// observers are the set-ups the benchmarks compare: no observer at all; the
// default, under the global no-op providers (no SDK installed); an SDK
// meter provider (tracing left to the no-op global); and SDK metrics and
// traces, every span sampled and recorded (then dropped: no exporter).
func observers(b *testing.B) []struct {
	name string
	obs  redlock.Observer
} {
	sdkMetrics := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	sdkTraces := sdktrace.NewTracerProvider()
	b.Cleanup(func() {
		sdkMetrics.Shutdown(context.Background())
		sdkTraces.Shutdown(context.Background())
	})
	must := func(obs redlock.Observer, err error) redlock.Observer {
		if err != nil {
			b.Fatalf("otelredlock.New: %v", err)
		}
		return obs
	}
	return []struct {
		name string
		obs  redlock.Observer
	}{
		{"none", nil},
		{"otel-noop", must(otelredlock.New())},
		{"otel-sdk-metrics", must(otelredlock.New(otelredlock.WithMeterProvider(sdkMetrics)))},
		{"otel-sdk-all", must(otelredlock.New(otelredlock.WithMeterProvider(sdkMetrics), otelredlock.WithTracerProvider(sdkTraces)))},
	}
}

// BenchmarkTryLockUnlock is one uncontended acquisition and release on a
// three-node lab, with each observer set-up.
func BenchmarkTryLockUnlock(b *testing.B) {
	lab := redislab.Start(b, 3)
	lab.Trust(b, redlock.TrustStart)
	ctx := context.Background()
	for _, o := range observers(b) {
		b.Run("observer="+o.name, func(b *testing.B) {
			c := newClient(b, lab, o.obs)
			b.ReportAllocs()
			for b.Loop() {
				l, err := c.TryLock(ctx, "bench")
				if err != nil {
					b.Fatalf("TryLock: %v", err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatalf("Unlock: %v", err)
				}
			}
		})
	}
}

// BenchmarkObserver is what an acquisition and a renewal cost the observer
// itself, without the network.
func BenchmarkObserver(b *testing.B) {
	for _, o := range observers(b) {
		if o.obs == nil {
			continue
		}
		b.Run("observer="+o.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx := o.obs.AcquireStart(context.Background(), "bench", false)
				o.obs.AcquireDone(ctx, "bench", nil, time.Millisecond, redlock.ErrNotObtained)
				o.obs.Renewed(ctx, "bench", nil)
			}
		})
	}
}

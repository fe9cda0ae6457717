package otelredlock_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock"
	"github.com/seed818c56a1/quorumlock/redlock/otelredlock"
)

// Wiring the observer into a Client. Here the SDK keeps everything in
// memory, over three local masters; an application installs its exporters
// instead (or calls otelredlock.New() with no options to use the global
// providers). The example lives in this test module, with the SDK, so that
// otelredlock's own go.mod names only the OpenTelemetry API.
func Example() {
	nodes, stop := masters(3)
	defer stop()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	obs, err := otelredlock.New(
		otelredlock.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		otelredlock.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))))
	if err != nil {
		panic(err)
	}
	// A roomy node timeout keeps every attempt of the example a first
	// success on a loaded machine, so its output is fixed.
	locks, err := redlock.New(nodes, redlock.WithObserver(obs), redlock.WithNodeTimeout(250*time.Millisecond))
	if err != nil {
		panic(err)
	}
	defer locks.Close()

	ctx := context.Background()
	l, err := locks.TryLock(ctx, "orders/42")
	if err != nil {
		panic(err)
	}
	if _, err := locks.TryLock(ctx, "orders/42"); err == nil { // held: not obtained
		panic("locked twice")
	}
	if err := l.Unlock(ctx); err != nil {
		panic(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	printMetrics(rm, otelredlock.AcquireDurationName, otelredlock.AcquisitionsName)
	for _, s := range spans.Ended() {
		fmt.Println(s.Name(), s.Status().Code, joinAttrs(s.Attributes()))
	}
	// Output:
	// quorumlock.acquire.duration (s)
	//   quorumlock.result=not_obtained quorumlock.wait=false: 1
	//   quorumlock.result=obtained quorumlock.wait=false: 1
	// quorumlock.acquisitions ({acquisition})
	//   quorumlock.result=not_obtained: 1
	//   quorumlock.result=obtained: 1
	// quorumlock.acquire Unset quorumlock.key=orders/42 quorumlock.token>0:true quorumlock.wait=false
	// quorumlock.acquire Error error.type=not_obtained quorumlock.granted=0 quorumlock.key=orders/42 quorumlock.need=2 quorumlock.wait=false
}

// masters starts n local redis-server masters, new and so vouched for
// (TrustStart), and returns a client of each; stop closes the clients and
// the servers. Where no redis-server is installed the test binary skips the
// examples (redislab.SkipExamplesWithoutServer).
func masters(n int) ([]redis.UniversalClient, func()) {
	return redislab.LaunchClients(n, redlock.TrustStart)
}

// printMetrics prints the named metrics' data points: counts of histograms,
// values of counters.
func printMetrics(rm metricdata.ResourceMetrics, names ...string) {
	for _, name := range names {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name {
					continue
				}
				fmt.Printf("%s (%s)\n", m.Name, m.Unit)
				var lines []string
				switch d := m.Data.(type) {
				case metricdata.Histogram[float64]:
					for _, dp := range d.DataPoints {
						lines = append(lines, fmt.Sprintf("  %s: %d", joinAttrs(dp.Attributes.ToSlice()), dp.Count))
					}
				case metricdata.Sum[int64]:
					for _, dp := range d.DataPoints {
						lines = append(lines, fmt.Sprintf("  %s: %d", joinAttrs(dp.Attributes.ToSlice()), dp.Value))
					}
				}
				slices.Sort(lines)
				fmt.Println(strings.Join(lines, "\n"))
			}
		}
	}
}

// joinAttrs prints attributes as sorted key=value pairs.
func joinAttrs(attrs []attribute.KeyValue) string {
	out := make([]string, len(attrs))
	for i, a := range attrs {
		out[i] = string(a.Key) + "=" + a.Value.String()
		if a.Key == otelredlock.TokenKey { // a large number that differs each run
			out[i] = fmt.Sprintf("%s>0:%v", a.Key, a.Value.AsInt64() > 0)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

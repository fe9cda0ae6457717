package otelredlock_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
	"github.com/seed818c56a1/quorumlock/redlock/otelredlock"
)

func TestMain(m *testing.M) {
	testkit.Main(m)
}

// A telemetry is an SDK pipeline that keeps everything in memory: metrics
// read on demand, spans recorded as they end.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	obs    redlock.Observer
}

func newTelemetry(t testing.TB) *telemetry {
	t.Helper()
	tm := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tm.reader))
	tm.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tm.spans))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Errorf("meter provider Shutdown: %v", err)
		}
		if err := tm.tp.Shutdown(context.Background()); err != nil {
			t.Errorf("tracer provider Shutdown: %v", err)
		}
	})
	obs, err := otelredlock.New(otelredlock.WithMeterProvider(mp), otelredlock.WithTracerProvider(tm.tp))
	if err != nil {
		t.Fatalf("otelredlock.New: %v", err)
	}
	tm.obs = obs
	return tm
}

// client starts a lab of n masters and a Client over them that reports to
// tm's observer.
func client(t *testing.T, tm *telemetry, n int, opts ...redlock.Option) (*redlock.Client, *redislab.Lab) {
	t.Helper()
	lab := redislab.Start(t, n)
	lab.Trust(t, redlock.TrustStart)
	return newClient(t, lab, tm.obs, opts...), lab
}

// newClient returns a Client over lab that reports to obs (none when nil),
// closed in t.Cleanup.
func newClient(t testing.TB, lab *redislab.Lab, obs redlock.Observer, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithNodeTimeout(testkit.NodeTimeout)}, opts...)
	if obs != nil {
		opts = append(opts, redlock.WithObserver(obs))
	}
	return testkit.Open(t, redlock.New, lab.Clients(t), opts...)
}

// metric returns the named metric as last collected, and whether it had
// any data.
func (tm *telemetry) metric(t *testing.T, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// count sums the named counter over the data points that carry every one of
// attrs.
func (tm *telemetry) count(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := tm.metric(t, name)
	if !ok {
		return 0
	}
	sum, isSum := m.Data.(metricdata.Sum[int64])
	if !isSum {
		t.Fatalf("%s: data is %T, want metricdata.Sum[int64]", name, m.Data)
	}
	var n int64
	for _, dp := range sum.DataPoints {
		if has(dp.Attributes, attrs) {
			n += dp.Value
		}
	}
	return n
}

// durations returns the number of acquire durations recorded with attrs.
func (tm *telemetry) durations(t *testing.T, attrs ...attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := tm.metric(t, otelredlock.AcquireDurationName)
	if !ok {
		return 0
	}
	if m.Unit != "s" {
		t.Errorf("%s: unit %q, want s", m.Name, m.Unit)
	}
	h, isHist := m.Data.(metricdata.Histogram[float64])
	if !isHist {
		t.Fatalf("%s: data is %T, want metricdata.Histogram[float64]", m.Name, m.Data)
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if has(dp.Attributes, attrs) {
			n += dp.Count
		}
	}
	return n
}

// logOnFailure logs every counter's data points if t failed.
func (tm *telemetry) logOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Errorf("Collect: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					t.Logf("%s %v = %d", m.Name, dp.Attributes.ToSlice(), dp.Value)
				}
			}
		}
	}
}

func has(set attribute.Set, attrs []attribute.KeyValue) bool {
	for _, a := range attrs {
		if v, ok := set.Value(a.Key); !ok || v != a.Value {
			return false
		}
	}
	return true
}

// ended returns the acquire spans that ended so far.
func (tm *telemetry) ended() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tm.spans.Ended() {
		if s.Name() == otelredlock.AcquireSpanName {
			out = append(out, s)
		}
	}
	return out
}

// attr returns the value of span attribute k.
func attr(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes() {
		if a.Key == k {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// unlock releases l, failing t if the release was not confirmed.
func unlock(t *testing.T, l *redlock.Lock) {
	t.Helper()
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock: %v", err)
	}
}

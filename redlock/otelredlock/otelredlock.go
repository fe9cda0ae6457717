package otelredlock

import (
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/seed818c56a1/quorumlock/redlock/otelredlock"

// Instrument and span names.
const (
	AcquireDurationName = "quorumlock.acquire.duration" // histogram, s; result, wait
	AcquisitionsName    = "quorumlock.acquisitions"     // counter, {acquisition}; result
	RenewalsName        = "quorumlock.renewals"         // counter, {renewal}; result
	LossesName          = "quorumlock.losses"           // counter, {loss}
	NodeErrorsName      = "quorumlock.node.errors"      // counter, {error}; op, server.address, server.port, error.type
	AcquireSpanName     = "quorumlock.acquire"          // one span per acquisition
	RenewSpanName       = "quorumlock.renew"            // a renewal that failed, a child of the acquire span
	LostSpanName        = "quorumlock.lost"             // a loss, a child of the acquire span
	NodeErrorEventName  = "quorumlock.node.error"       // event on the acquire span, or the caller's
)

// Attribute keys. Metrics carry only the bounded ones (result, wait, op,
// node address, error type); the lock key and the token go on spans only.
const (
	ResultKey  = attribute.Key("quorumlock.result")  // obtained, not_obtained, cancelled, invalid, closed; renewals: ok, failed, lost
	WaitKey    = attribute.Key("quorumlock.wait")    // true for Lock and Do, false for TryLock
	OpKey      = attribute.Key("quorumlock.op")      // lock, acquire, extend or unlock
	NodeKey    = attribute.Key("quorumlock.node")    // the node's index, when its address is unknown (metrics) and on span events
	KeyKey     = attribute.Key("quorumlock.key")     // spans only
	TokenKey   = attribute.Key("quorumlock.token")   // spans only, on success
	GrantedKey = attribute.Key("quorumlock.granted") // spans only, on a failed round: nodes that granted
	NeedKey    = attribute.Key("quorumlock.need")    // spans only, on a failed round: the majority
)

// durationBuckets suit both a one-shot TryLock (a round trip, a few ms on a
// LAN) and a Lock that waits (up to DefaultMaxWait, 30 s).
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// An Option configures New.
type Option func(*config)

type config struct {
	mp metric.MeterProvider
	tp trace.TracerProvider
}

// WithMeterProvider sets where metrics go. Default: otel.GetMeterProvider(),
// read once by New.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider sets where spans go. Default: otel.GetTracerProvider(),
// read once by New.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// New returns an Observer that records a Client's acquisitions, renewals,
// losses and node errors as OpenTelemetry metrics and spans; give it to
// redlock.New with redlock.WithObserver. The global providers, which New
// uses by default, do nothing until the application installs an SDK (and
// forward to it once it does). New fails on a nil provider or when the
// meter refuses an instrument.
func New(opts ...Option) (redlock.Observer, error) {
	cfg := config{mp: otel.GetMeterProvider(), tp: otel.GetTracerProvider()}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.mp == nil {
		return nil, errors.New("otelredlock: nil MeterProvider")
	}
	if cfg.tp == nil {
		return nil, errors.New("otelredlock: nil TracerProvider")
	}
	o := &observer{tracer: cfg.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))}
	if err := o.instruments(cfg.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))); err != nil {
		return nil, err
	}
	o.precompute()
	return o, nil
}

func (o *observer) instruments(m metric.Meter) error {
	var err [5]error
	o.duration, err[0] = m.Float64Histogram(AcquireDurationName, metric.WithUnit("s"),
		metric.WithDescription("Duration of lock acquisitions by Lock, TryLock and Do, waiting included."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	o.acquisitions, err[1] = m.Int64Counter(AcquisitionsName, metric.WithUnit("{acquisition}"),
		metric.WithDescription("Lock acquisitions, by result."))
	o.renewals, err[2] = m.Int64Counter(RenewalsName, metric.WithUnit("{renewal}"),
		metric.WithDescription("Watchdog renewals of held locks, by result."))
	o.losses, err[3] = m.Int64Counter(LossesName, metric.WithUnit("{loss}"),
		metric.WithDescription("Held locks lost: renewal could not reach a majority in time, or a majority found the lock gone."))
	o.nodeErrors, err[4] = m.Int64Counter(NodeErrorsName, metric.WithUnit("{error}"),
		metric.WithDescription("Calls to one node that failed or timed out, by operation and node."))
	return errors.Join(err[:]...)
}

// An acquisition's outcome, as the result attribute tells it.
type result int

const (
	obtained result = iota
	notObtained
	cancelled
	invalid
	closed
	nResults
)

var resultNames = [nResults]string{"obtained", "not_obtained", "cancelled", "invalid", "closed"}

// A renewal's outcome.
type renewal int

const (
	renewOK renewal = iota
	renewFailed
	renewLost
	nRenewals
)

var renewalNames = [nRenewals]string{"ok", "failed", "lost"}

// precompute builds every attribute set the hot path uses once, so that
// recording a measurement allocates nothing for attributes.
func (o *observer) precompute() {
	for r := range nResults {
		res := ResultKey.String(resultNames[r])
		o.acquiredOpts[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(res))}
		for w, wait := range []bool{false, true} {
			o.durationOpts[r][w] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(res, WaitKey.Bool(wait)))}
		}
	}
	for r := range nRenewals {
		o.renewalOpts[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(ResultKey.String(renewalNames[r])))}
	}
}

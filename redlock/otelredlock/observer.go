package otelredlock

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// observer is the redlock.Observer New returns. It is safe for concurrent
// use, and may serve several Clients. It keeps no state per key or per
// lock: each event finds its acquisition's span in its context.
type observer struct {
	redlock.NopObserver // any event added to Observer later is ignored

	tracer       trace.Tracer
	duration     metric.Float64Histogram
	acquisitions metric.Int64Counter
	renewals     metric.Int64Counter
	losses       metric.Int64Counter
	nodeErrors   metric.Int64Counter

	durationOpts [nResults][2][]metric.RecordOption // by result, then wait
	acquiredOpts [nResults][]metric.AddOption
	renewalOpts  [nRenewals][]metric.AddOption
}

// acquisitionKey holds, in an acquisition's context, what AcquireDone needs
// from AcquireStart: the wait flag (a bool: boxing it allocates nothing) or,
// when the span records, an *acquisition. The key is per observer: another
// observer after this one may put its own span in the context. The Lock
// keeps that context (without its cancellation) for the events of its
// lifetime, so that Renewed and Lost find the acquisition's span there.
type acquisitionKey struct{ o *observer }

type acquisition struct {
	span trace.Span
	wait bool
}

// AcquireStart starts the acquire span, a child of any span in ctx. Its
// attributes are set after the start, and only if it records, so that the
// no-op default allocates nothing for them; a sampler sees the name only.
func (o *observer) AcquireStart(ctx context.Context, key string, wait bool) context.Context {
	ctx, span := o.tracer.Start(ctx, AcquireSpanName)
	if span.IsRecording() {
		span.SetAttributes(KeyKey.String(key), WaitKey.Bool(wait))
		return context.WithValue(ctx, acquisitionKey{o}, &acquisition{span: span, wait: wait})
	}
	// A non-recording span's End does nothing: no need to find it again.
	if o.duration.Enabled(ctx) {
		return context.WithValue(ctx, acquisitionKey{o}, wait)
	}
	return ctx
}

// AcquireDone records the acquisition's duration and result, and ends its
// span: with the token on success, with status Error otherwise.
func (o *observer) AcquireDone(ctx context.Context, key string, l *redlock.Lock, took time.Duration, err error) {
	r := classify(err)
	o.acquisitions.Add(ctx, 1, o.acquiredOpts[r]...)
	var a *acquisition
	w := -1 // unknown: the histogram was off at the start
	switch v := ctx.Value(acquisitionKey{o}).(type) {
	case bool:
		w = boolIndex(v)
	case *acquisition:
		a, w = v, boolIndex(v.wait)
	}
	if w >= 0 {
		o.duration.Record(ctx, took.Seconds(), o.durationOpts[r][w]...)
	}
	if a == nil {
		return
	}
	switch {
	case err != nil:
		failSpan(a.span, r, err)
	case l != nil:
		a.span.SetAttributes(TokenKey.Int64(l.Token()))
	}
	a.span.End()
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// failSpan marks span as failed, with the round's tally when err has one.
func failSpan(span trace.Span, r result, err error) {
	attrs := []attribute.KeyValue{semconv.ErrorTypeKey.String(resultNames[r])}
	var qe *redlock.QuorumError
	if errors.As(err, &qe) {
		attrs = append(attrs, GrantedKey.Int(qe.Granted), NeedKey.Int(qe.Need))
	}
	span.SetAttributes(attrs...)
	span.SetStatus(codes.Error, err.Error())
}

// classify maps an acquisition's error to its result. Lock's own deadline
// (or the maximum wait) is not_obtained; a caller's cancellation is
// cancelled.
func classify(err error) result {
	switch {
	case err == nil:
		return obtained
	case errors.Is(err, redlock.ErrInvalid):
		return invalid
	case errors.Is(err, redlock.ErrClosed):
		return closed
	case errors.Is(err, context.Canceled):
		return cancelled
	}
	return notObtained
}

// acquireSpan returns the span of the acquisition ctx belongs to, if it was
// recorded: still recording during the acquisition, ended afterwards.
func (o *observer) acquireSpan(ctx context.Context) (trace.Span, bool) {
	a, ok := ctx.Value(acquisitionKey{o}).(*acquisition)
	if !ok {
		return nil, false
	}
	return a.span, true
}

// Renewed counts a watchdog extension: ok, lost (a majority found the lock
// gone, or its validity had run out) or failed (too few answers; the
// watchdog retries until the validity runs out). A renewal that did not
// succeed is also a span, a child of the acquisition's.
func (o *observer) Renewed(ctx context.Context, key string, err error) {
	r := renewOK
	switch {
	case errors.Is(err, redlock.ErrLockLost):
		r = renewLost
	case err != nil:
		r = renewFailed
	}
	o.renewals.Add(ctx, 1, o.renewalOpts[r]...)
	if r != renewOK {
		o.afterAcquire(ctx, RenewSpanName, key, renewalNames[r], err)
	}
}

// Lost counts a lost lock, and records the loss as a span, a child of the
// acquisition's.
func (o *observer) Lost(ctx context.Context, key string, cause error) {
	o.losses.Add(ctx, 1)
	o.afterAcquire(ctx, LostSpanName, key, renewalNames[renewLost], cause)
}

// afterAcquire records an event of a held lock — a failed renewal, a loss —
// as a span named name, a child of the span of the lock's acquisition when
// it was recorded, ended at once with status Error. The acquire span has
// ended by then, and an ended span takes no more events.
func (o *observer) afterAcquire(ctx context.Context, name, key, kind string, err error) {
	parent, ok := o.acquireSpan(ctx)
	if !ok {
		return
	}
	_, span := o.tracer.Start(trace.ContextWithSpan(ctx, parent), name)
	span.SetAttributes(KeyKey.String(key), semconv.ErrorTypeKey.String(kind))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// NodeFailed counts a failed node call, by op and node, and adds an event to
// the span of its context while that records: the acquire span, for the
// acquisition's calls; the caller's span, for Extend and Unlock. The
// watchdog's failures, whose acquire span has ended, are metrics only.
func (o *observer) NodeFailed(ctx context.Context, op, key string, v redlock.NodeVote) {
	span, ok := o.acquireSpan(ctx)
	if !ok {
		span = trace.SpanFromContext(ctx)
	}
	live := span.IsRecording()
	counted := o.nodeErrors.Enabled(ctx)
	if !counted && !live { // the no-op default: build no attributes
		return
	}
	node := nodeAttrs(v)
	kind := errorType(v.Err)
	if counted {
		attrs := make([]attribute.KeyValue, 0, len(node)+2)
		attrs = append(append(attrs, OpKey.String(op), kind), node...)
		o.nodeErrors.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
	if live {
		ev := append(node, NodeKey.Int(v.Node), OpKey.String(op), kind)
		if v.Err != nil {
			ev = append(ev, semconv.ExceptionMessage(v.Err.Error()))
		}
		span.AddEvent(NodeErrorEventName, trace.WithAttributes(ev...))
	}
}

// nodeAttrs names a node by server.address and server.port, or by its index
// when its client exposes no address.
func nodeAttrs(v redlock.NodeVote) []attribute.KeyValue {
	if v.Addr == "" {
		return []attribute.KeyValue{NodeKey.Int(v.Node)}
	}
	host, port, err := net.SplitHostPort(v.Addr)
	if err != nil {
		return []attribute.KeyValue{semconv.ServerAddress(v.Addr)}
	}
	if p, err := strconv.Atoi(port); err == nil {
		return []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(p)}
	}
	return []attribute.KeyValue{semconv.ServerAddress(host)}
}

// errorType sorts a node error into a few kinds (error.type must stay low
// cardinality): timeout, connection, node_restarted, redis (an error reply),
// or _OTHER.
func errorType(err error) attribute.KeyValue {
	var ne net.Error
	var op *net.OpError
	var re redis.Error
	switch {
	case errors.Is(err, redlock.ErrNodeRestarted):
		return semconv.ErrorTypeKey.String("node_restarted")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return semconv.ErrorTypeKey.String("timeout")
	case errors.As(err, &op), errors.Is(err, io.EOF), errors.Is(err, redis.ErrClosed):
		return semconv.ErrorTypeKey.String("connection")
	case errors.As(err, &re):
		return semconv.ErrorTypeKey.String("redis")
	}
	return semconv.ErrorTypeOther
}

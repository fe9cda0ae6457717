// Package otelredlock reports what a redlock.Client does as OpenTelemetry
// metrics and traces: it is a redlock.Observer, given to redlock.New.
//
//	obs, err := otelredlock.New() // the global providers; or WithMeterProvider, WithTracerProvider
//	if err != nil {
//		return err
//	}
//	locks, err := redlock.New(nodes, redlock.WithObserver(obs))
//
// Without an SDK installed (otel.SetMeterProvider, otel.SetTracerProvider),
// the global providers do nothing, and so does the observer but for the
// global tracer's own non-recording span (3 allocations, a few hundred
// nanoseconds per acquisition): nothing measurable next to the round trips
// of an acquisition (BenchmarkTryLockUnlock, BenchmarkObserver, in
// internal/sdktest: the tests read the SDK, so they are a module apart and
// this package's go.mod names the OpenTelemetry API only).
//
// # Metrics
//
// Units follow the OpenTelemetry semantic conventions. Lock keys are never
// metric attributes — their number is unbounded; they go on spans only.
//
//	name                         kind       unit           attributes
//	quorumlock.acquire.duration  histogram  s              quorumlock.result, quorumlock.wait
//	quorumlock.acquisitions      counter    {acquisition}  quorumlock.result
//	quorumlock.renewals          counter    {renewal}      quorumlock.result
//	quorumlock.losses            counter    {loss}
//	quorumlock.node.errors       counter    {error}        quorumlock.op, server.address, server.port, error.type
//
// An acquisition's quorumlock.result is obtained, not_obtained (no majority,
// or Lock's deadline or maximum wait ran out), cancelled (the caller's
// context was cancelled), invalid or closed; quorumlock.wait is true for
// Lock and Do, false for TryLock. A renewal's is ok, failed (too few nodes
// answered; the watchdog retries until the validity runs out) or lost. A
// node error's quorumlock.op is lock, acquire (a semaphore's permit),
// extend or unlock, and its error.type one of timeout, connection,
// node_restarted, redis or _OTHER; a node whose redis client exposes no
// address is named by quorumlock.node, its index.
//
// # Traces
//
// Each acquisition by Lock, TryLock or Do is one span, quorumlock.acquire, a
// child of the span in the caller's context, with the attributes
// quorumlock.key, quorumlock.wait and, on success, quorumlock.token. A
// failed acquisition ends with status Error, error.type set to its result
// and, when a round was counted, quorumlock.granted and quorumlock.need.
// The attributes are set once the span has started, and only if it records,
// so a sampler sees the span's name and parent only. The redis calls of the
// acquisition run under this span's context.
//
// A node that fails during the acquisition adds a quorumlock.node.error
// event to the acquire span; one that fails during Extend or Unlock adds it
// to the caller's span, if that records. Each event has the node, the
// operation (quorumlock.op), error.type and the error's message.
//
// A held lock's failed renewals and its loss are spans of their own,
// quorumlock.renew and quorumlock.lost, with status Error, the key and
// error.type (failed or lost): children of the lock's acquire span, in its
// trace, since the acquire span has ended by then. Renewals that succeed are
// counted only: a span for each would flood the traces of long-held locks.
//
// The observer keeps no state per key or per lock: redlock gives every event
// the context it belongs to — the Lock keeps its acquisition's, without the
// cancellation — and the span is found there. So concurrent acquisitions of
// one key, on one Client or several sharing the observer, each get their
// own span and their own events.
package otelredlock

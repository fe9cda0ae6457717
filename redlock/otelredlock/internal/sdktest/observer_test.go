package otelredlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/seed818c56a1/quorumlock/redlock"
	o "github.com/seed818c56a1/quorumlock/redlock/otelredlock"
)

// These tests call the Observer's methods directly, as a Client would, for
// the cases a live lab cannot produce on demand.

// Every acquisition error maps to one result; failures end their span in
// error.
func TestResults(t *testing.T) {
	cases := []struct {
		err    error
		result string
	}{
		{redlock.ErrNotObtained, "not_obtained"},
		{errors.Join(context.DeadlineExceeded, redlock.ErrNotObtained), "not_obtained"},
		{errors.Join(context.Canceled, redlock.ErrNotObtained), "cancelled"},
		{fmt.Errorf("%w: empty key", redlock.ErrInvalid), "invalid"},
		{redlock.ErrClosed, "closed"},
		{errors.New("something else"), "not_obtained"},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			tm := newTelemetry(t)
			ctx := tm.obs.AcquireStart(context.Background(), "k", true)
			tm.obs.AcquireDone(ctx, "k", nil, 3*time.Millisecond, tc.err)
			res := o.ResultKey.String(tc.result)
			if got := tm.durations(t, res, o.WaitKey.Bool(true)); got != 1 {
				t.Errorf("durations{%s, wait=true} = %d, want 1", tc.result, got)
			}
			spans := tm.ended()
			if len(spans) != 1 || spans[0].Status().Code != codes.Error {
				t.Fatalf("got %d spans, want 1 with status Error", len(spans))
			}
			if v, _ := attr(spans[0], "error.type"); v.AsString() != tc.result {
				t.Errorf("error.type = %q, want %q", v.AsString(), tc.result)
			}
		})
	}
}

func TestRenewals(t *testing.T) {
	tm := newTelemetry(t)
	quorumErr := &redlock.QuorumError{Op: "extend", Key: "k", Need: 2}
	for _, err := range []error{nil, nil, quorumErr, fmt.Errorf("extend: %w", redlock.ErrLockLost)} {
		tm.obs.Renewed(context.Background(), "k", err)
	}
	for result, want := range map[string]int64{"ok": 2, "failed": 1, "lost": 1} {
		if got := tm.count(t, o.RenewalsName, o.ResultKey.String(result)); got != want {
			t.Errorf("renewals{%s} = %d, want %d", result, got, want)
		}
	}
}

// Two acquisitions of one key in flight at once each get their node errors
// on their own span, and, once held, their failed renewals and loss as
// spans under it; a node error of Extend or Unlock goes on the caller's
// span. Every node error is counted, without the key.
func TestEventsFindTheirSpanByContext(t *testing.T) {
	tm := newTelemetry(t)
	vote := redlock.NodeVote{Node: 1, Addr: "10.0.0.7:6379", Outcome: redlock.Failed, Err: context.DeadlineExceeded}
	first := tm.obs.AcquireStart(context.Background(), "k", true)
	second := tm.obs.AcquireStart(context.Background(), "k", true)
	tm.obs.NodeFailed(first, "lock", "k", vote)
	tm.obs.NodeFailed(second, "lock", "k", vote)
	tm.obs.NodeFailed(second, "lock", "k", vote)
	tm.obs.AcquireDone(first, "k", nil, time.Millisecond, nil)
	tm.obs.AcquireDone(second, "k", nil, time.Millisecond, nil)
	// The Locks' own contexts: the acquisitions', without their cancellation.
	tm.obs.Renewed(context.WithoutCancel(second), "k", &redlock.QuorumError{Op: "extend", Key: "k", Need: 2})
	tm.obs.Lost(context.WithoutCancel(second), "k", redlock.ErrLockLost)
	tm.obs.Renewed(context.WithoutCancel(first), "k", nil)
	caller, span := tm.tp.Tracer("test").Start(context.Background(), "caller")
	tm.obs.NodeFailed(caller, "unlock", "k", vote)
	span.End()

	node := []attribute.KeyValue{attribute.String("server.address", "10.0.0.7"), attribute.Int("server.port", 6379),
		attribute.String("error.type", "timeout")}
	acquires := tm.ended()
	if len(acquires) != 2 {
		t.Fatalf("got %d acquire spans, want 2", len(acquires))
	}
	for i, want := range []int{1, 2} {
		if got := events(acquires[i], node); got != want {
			t.Errorf("acquire span %d: %d node events, want %d", i, got, want)
		}
	}
	children := map[string]int{}
	for _, s := range tm.spans.Ended() {
		switch s.Name() {
		case o.RenewSpanName, o.LostSpanName:
			if s.Parent().SpanID() != acquires[1].SpanContext().SpanID() {
				t.Errorf("%s span's parent %v, want the second acquisition's %v", s.Name(), s.Parent().SpanID(), acquires[1].SpanContext().SpanID())
			}
			if s.Status().Code != codes.Error {
				t.Errorf("%s span status %v, want Error", s.Name(), s.Status())
			}
			children[s.Name()]++
		case "caller":
			if got := events(s, append(node, o.OpKey.String("unlock"))); got != 1 {
				t.Errorf("caller's span: %d unlock node events, want 1", got)
			}
		}
	}
	if children[o.RenewSpanName] != 1 || children[o.LostSpanName] != 1 {
		t.Errorf("spans after the acquisition: %v, want one failed renewal and one loss (none for the ok renewal)", children)
	}
	if got := tm.count(t, o.NodeErrorsName, append(node, o.OpKey.String("lock"))...); got != 3 {
		t.Errorf("node.errors{lock} = %d, want 3", got)
	}
	if got := tm.count(t, o.NodeErrorsName, append(node, o.OpKey.String("unlock"))...); got != 1 {
		t.Errorf("node.errors{unlock} = %d, want 1", got)
	}
}

// A node whose client exposes no address is named by its index.
func TestNodeWithoutAddress(t *testing.T) {
	tm := newTelemetry(t)
	tm.obs.NodeFailed(context.Background(), "unlock", "k", redlock.NodeVote{Node: 2, Outcome: redlock.Failed, Err: redlock.ErrNodeRestarted})
	want := []attribute.KeyValue{o.NodeKey.Int(2), o.OpKey.String("unlock"), attribute.String("error.type", "node_restarted")}
	if got := tm.count(t, o.NodeErrorsName, want...); got != 1 {
		t.Errorf("node.errors%v = %d, want 1", want, got)
	}
}

func TestNewRefusesNilProviders(t *testing.T) {
	for name, opt := range map[string]o.Option{
		"meter":  o.WithMeterProvider(nil),
		"tracer": o.WithTracerProvider(nil),
	} {
		if obs, err := o.New(opt); err == nil || obs != nil {
			t.Errorf("New with a nil %s provider = %v, %v; want an error", name, obs, err)
		}
	}
}

// The default, under the global no-op providers, allocates nothing of its
// own: what remains is the global tracer's non-recording span in the
// context.
func TestDefaultIsNoOp(t *testing.T) {
	obs, err := o.New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := obs.AcquireStart(context.Background(), "k", false)
	obs.NodeFailed(ctx, "lock", "k", redlock.NodeVote{Outcome: redlock.Failed, Err: errors.New("x")})
	obs.AcquireDone(ctx, "k", nil, time.Millisecond, redlock.ErrNotObtained)
	obs.Renewed(ctx, "k", errors.New("x"))
	obs.Lost(ctx, "k", redlock.ErrLockLost)
	allocs := testing.AllocsPerRun(100, func() {
		ctx := obs.AcquireStart(context.Background(), "k", false)
		obs.AcquireDone(ctx, "k", nil, time.Millisecond, nil)
		obs.Renewed(ctx, "k", nil)
	})
	t.Logf("no-op acquisition + renewal: %.0f allocs", allocs)
	if allocs > 3 {
		t.Errorf("no-op acquisition + renewal: %.0f allocs, want at most 3 (the global tracer's)", allocs)
	}
}

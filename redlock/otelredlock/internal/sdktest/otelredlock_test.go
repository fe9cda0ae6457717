package otelredlock_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
	o "github.com/seed818c56a1/quorumlock/redlock/otelredlock"
)

var (
	obtained    = o.ResultKey.String("obtained")
	notObtained = o.ResultKey.String("not_obtained")
	noWait      = o.WaitKey.Bool(false)
)

// A TryLock that succeeds is one span, a child of the caller's, with the
// key and the token, and one duration with result obtained.
func TestTryLockRecordsSpanAndDuration(t *testing.T) {
	tm := newTelemetry(t)
	c, _ := client(t, tm, 3)
	ctx, parent := tm.tp.Tracer("test").Start(testkit.Context(t, 10*time.Second), "caller")
	l, err := c.TryLock(ctx, "orders/42")
	parent.End()
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer unlock(t, l)

	spans := tm.ended()
	if len(spans) != 1 {
		t.Fatalf("got %d acquire spans, want 1", len(spans))
	}
	s := spans[0]
	if got, want := s.Parent().SpanID(), parent.SpanContext().SpanID(); got != want {
		t.Errorf("parent span %v, want the caller's %v", got, want)
	}
	for k, want := range map[attribute.Key]attribute.Value{
		o.KeyKey:   attribute.StringValue("orders/42"),
		o.WaitKey:  attribute.BoolValue(false),
		o.TokenKey: attribute.Int64Value(l.Token()),
	} {
		if got, ok := attr(s, k); !ok || got != want {
			t.Errorf("span attribute %s = %v (present %t), want %v", k, got.String(), ok, want.String())
		}
	}
	if s.Status().Code != codes.Unset {
		t.Errorf("span status %v, want Unset", s.Status())
	}
	if got := tm.durations(t, obtained, noWait); got != 1 {
		t.Errorf("durations{obtained, wait=false} = %d, want 1", got)
	}
	if got := tm.count(t, o.AcquisitionsName, obtained); got != 1 {
		t.Errorf("acquisitions{obtained} = %d, want 1", got)
	}
	if got := tm.count(t, o.AcquisitionsName, o.KeyKey.String("orders/42")); got != 0 {
		t.Errorf("acquisitions carry the lock key: %d points", got)
	}
}

// A second TryLock of a held key records not_obtained, and its span ends in
// error with the round's tally.
func TestHeldKeyRecordsNotObtained(t *testing.T) {
	tm := newTelemetry(t)
	c, _ := client(t, tm, 3)
	ctx := testkit.Context(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("first TryLock: %v", err)
	}
	defer unlock(t, l)
	if _, err := c.TryLock(ctx, "k"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("second TryLock: %v, want ErrNotObtained", err)
	}
	if got := tm.durations(t, notObtained, noWait); got != 1 {
		t.Errorf("durations{not_obtained, wait=false} = %d, want 1", got)
	}
	if got := tm.count(t, o.AcquisitionsName, notObtained); got != 1 {
		t.Errorf("acquisitions{not_obtained} = %d, want 1", got)
	}
	spans := tm.ended()
	if len(spans) != 2 {
		t.Fatalf("got %d acquire spans, want 2", len(spans))
	}
	s := spans[1]
	if s.Status().Code != codes.Error {
		t.Errorf("span status %v, want Error", s.Status())
	}
	if _, ok := attr(s, o.TokenKey); ok {
		t.Errorf("failed acquisition's span has a token")
	}
	if v, _ := attr(s, "error.type"); v.AsString() != "not_obtained" {
		t.Errorf("error.type = %q, want not_obtained", v.AsString())
	}
	if v, _ := attr(s, o.NeedKey); v.AsInt64() != 2 {
		t.Errorf("need = %d, want 2", v.AsInt64())
	}
}

// Lock (wait=true) tells a deadline from a cancellation and a closed Client.
func TestLockResults(t *testing.T) {
	lab := redislab.Start(t, 3)
	lab.Trust(t, redlock.TrustStart)
	holder, err := newClient(t, lab, nil).TryLock(testkit.Context(t, 10*time.Second), "k")
	if err != nil {
		t.Fatalf("holder TryLock: %v", err)
	}
	defer unlock(t, holder)
	cases := []struct {
		name, result string
		end          func(cancel context.CancelFunc, c *redlock.Client) error
	}{
		{"deadline", "not_obtained", func(context.CancelFunc, *redlock.Client) error { return nil }},
		{"cancelled", "cancelled", func(cancel context.CancelFunc, _ *redlock.Client) error { cancel(); return nil }},
		{"closed", "closed", func(_ context.CancelFunc, c *redlock.Client) error { return c.Close() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTelemetry(t)
			c := newClient(t, lab, tm.obs)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			ended := make(chan error)
			go func() {
				for len(tm.spans.Started()) == 0 { // until Lock is under way
					time.Sleep(time.Millisecond)
				}
				ended <- tc.end(cancel, c)
			}()
			_, err := c.Lock(ctx, "k")
			if err := <-ended; err != nil {
				t.Errorf("ending the wait: %v", err)
			}
			if err == nil {
				t.Fatal("Lock of a held key succeeded")
			}
			res := o.ResultKey.String(tc.result)
			if got := tm.durations(t, res, o.WaitKey.Bool(true)); got != 1 {
				t.Errorf("durations{%s, wait=true} = %d, want 1 (Lock: %v)", tc.result, got, err)
			}
			if got := tm.count(t, o.AcquisitionsName, res); got != 1 {
				t.Errorf("acquisitions{%s} = %d, want 1", tc.result, got)
			}
		})
	}
}

// A lock whose majority dies is lost: renewals fail, the loss is counted,
// and so are the extend calls that failed, by node.
func TestLostLock(t *testing.T) {
	tm := newTelemetry(t)
	c, lab := client(t, tm, 3, redlock.WithTTL(400*time.Millisecond))
	lab.RequireControl(t)
	l, err := c.TryLock(testkit.Context(t, 10*time.Second), "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	lab.Kill(t, 0, 1)
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lock not lost 5 s after its majority died")
	}
	if !errors.Is(l.Err(), redlock.ErrLockLost) {
		t.Fatalf("Err() = %v, want ErrLockLost", l.Err())
	}
	// Lost is told just after Done closes; the renewal in flight when the
	// loss was declared (the loss comes a node timeout before the validity
	// ends) reports its failure when its calls time out.
	testkit.Eventually(t, 2*time.Second, "one loss counted", func() bool { return tm.count(t, o.LossesName) == 1 })
	defer tm.logOnFailure(t)
	testkit.Eventually(t, 2*time.Second, "a failed renewal counted", func() bool {
		return tm.count(t, o.RenewalsName, o.ResultKey.String("failed")) >= 1
	})
	for _, n := range lab.Nodes[:2] {
		testkit.Eventually(t, 2*time.Second, "extend errors counted for "+n.Addr(), func() bool {
			return tm.count(t, o.NodeErrorsName, append(nodeOf(t, n.Addr()), o.OpKey.String("extend"))...) >= 1
		})
	}
	if got := tm.count(t, o.LossesName); got != 1 {
		t.Errorf("losses = %d, want 1", got)
	}
	if got := tm.count(t, o.NodeErrorsName, nodeOf(t, lab.Nodes[2].Addr())...); got != 0 {
		t.Errorf("node.errors of the live node = %d, want 0", got)
	}
}

// Two acquisitions of one key at once — two readers — are two spans, each
// a child of its caller's; when one of the locks is lost, its failed
// renewals and its loss are spans under its own acquisition's span, and
// none is under the other's.
func TestConcurrentAcquisitionsOfOneKey(t *testing.T) {
	tm := newTelemetry(t)
	c, lab := client(t, tm, 3, redlock.WithTTL(400*time.Millisecond))
	lab.RequireControl(t)
	defer tm.logOnFailure(t)
	ctx := testkit.Context(t, 10*time.Second)
	names := []string{"caller-kept", "caller-lost"}
	callers := make([]trace.Span, 2)
	locks := make([]*redlock.Lock, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range locks {
		var cctx context.Context
		cctx, callers[i] = tm.tp.Tracer("test").Start(ctx, names[i])
		wg.Go(func() { locks[i], errs[i] = c.RLock(cctx, "k") })
	}
	wg.Wait()
	for i, err := range errs {
		callers[i].End()
		if err != nil {
			t.Fatalf("RLock %d: %v", i, err)
		}
	}
	unlock(t, locks[0])
	lab.Kill(t, 0, 1)
	select {
	case <-locks[1].Done():
	case <-time.After(5 * time.Second):
		t.Fatal("lock not lost 5 s after its majority died")
	}
	after := func(name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range tm.spans.Ended() {
			if s.Name() == name {
				out = append(out, s)
			}
		}
		return out
	}
	testkit.Eventually(t, 2*time.Second, "the loss and a failed renewal recorded", func() bool {
		return len(after(o.LostSpanName)) == 1 && len(after(o.RenewSpanName)) >= 1
	})

	acquire := map[string]trace.SpanContext{} // by caller
	for _, s := range tm.ended() {
		for i, caller := range callers {
			if s.Parent().SpanID() == caller.SpanContext().SpanID() {
				acquire[names[i]] = s.SpanContext()
			}
		}
	}
	if len(acquire) != 2 {
		t.Fatalf("acquire spans by caller: %v, want one under each of %v", acquire, names)
	}
	for _, s := range append(after(o.LostSpanName), after(o.RenewSpanName)...) {
		if got, want := s.Parent().SpanID(), acquire["caller-lost"].SpanID(); got != want {
			t.Errorf("%s span's parent %v, want the lost lock's acquisition %v (the other's is %v)",
				s.Name(), got, want, acquire["caller-kept"].SpanID())
		}
		if got, want := s.SpanContext().TraceID(), acquire["caller-lost"].TraceID(); got != want {
			t.Errorf("%s span in trace %v, want the lost lock's %v", s.Name(), got, want)
		}
		if v, _ := attr(s, o.KeyKey); v.AsString() != "k" {
			t.Errorf("%s span's key %q, want k", s.Name(), v.AsString())
		}
	}
}

// A TryLock without a majority counts each dead node's error, by op and
// node — the attempt's and its undo's — and adds one
// event per dead node to its span.
func TestNodeErrorsOnAcquire(t *testing.T) {
	tm := newTelemetry(t)
	c, lab := client(t, tm, 3)
	lab.RequireControl(t)
	defer tm.logOnFailure(t)
	lab.Kill(t, 1, 2)
	if _, err := c.TryLock(testkit.Context(t, 10*time.Second), "k"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock: %v, want ErrNotObtained", err)
	}
	for _, n := range lab.Nodes[1:] {
		node := nodeOf(t, n.Addr())
		// The attempt's error, then the undo's: a failed attempt is undone
		// on every node that did not refuse it, after TryLock returned.
		labels := append(node, o.OpKey.String("lock"))
		testkit.Eventually(t, 5*time.Second, "the attempt's and the undo's errors counted", func() bool {
			return tm.count(t, o.NodeErrorsName, labels...) >= 2
		})
		if got := tm.count(t, o.NodeErrorsName, labels...); got != 2 {
			t.Errorf("node.errors{lock, %s} = %d, want 2 (the attempt and its undo)", n.Addr(), got)
		}
		if got := events(tm.ended()[0], node); got != 1 {
			t.Errorf("span events for %s = %d, want 1", n.Addr(), got)
		}
	}
}

// events counts the node error events of s that carry attrs.
func events(s sdktrace.ReadOnlySpan, attrs []attribute.KeyValue) int {
	n := 0
	for _, e := range s.Events() {
		if e.Name == o.NodeErrorEventName && has(attribute.NewSet(e.Attributes...), attrs) {
			n++
		}
	}
	return n
}

// nodeOf returns the attributes that name the node at addr.
func nodeOf(t *testing.T, addr string) []attribute.KeyValue {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("address %q: %v", addr, err)
	}
	p, _ := strconv.Atoi(port)
	return []attribute.KeyValue{attribute.String("server.address", host), attribute.Int("server.port", p)}
}

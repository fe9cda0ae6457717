package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// WithLogger is quiet on the healthy path and logs, as structured records,
// acquisitions that failed, node errors, failed renewals and the loss.
func TestLoggerReportsFailuresOnly(t *testing.T) {
	var buf testkit.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	c, proxies, _ := faultLab(t, 3, redlock.WithLogger(logger), redlock.WithNodeTimeout(faultTimeout), redlock.WithTTL(400*time.Millisecond))
	ctx := ctxFor(t, 10*time.Second)
	l, err := c.TryLock(ctx, "k")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := l.Extend(ctx); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if got := buf.String(); got != "" {
		t.Fatalf("healthy path logged %q, want nothing", got)
	}
	for _, p := range proxies[:2] {
		p.SetBlackhole(true)
	}
	<-l.Done()
	if _, err := c.TryLock(ctx, "other"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock with 2 of 3 blackholed = %v", err)
	}
	eventually(t, 2*time.Second, "the failed acquisition logged", func() bool {
		return strings.Contains(buf.String(), `"msg":"redlock: lock not obtained"`)
	})
	logged := buf.String()
	for _, want := range []string{`"msg":"redlock: lock lost"`, `"msg":"redlock: renewal failed"`, `"msg":"redlock: node call failed"`, `"key":"k"`, `"op":"extend"`} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %s:\n%s", want, logged)
		}
	}
}

// A per-call observer is told of its acquisition's events — the Lock's
// renewals, node errors and loss included — and of no other; the Client's
// observers are told of everything. Every event of a Lock comes with the
// Lock's own context: what AcquireStart returned, without its cancellation.
func TestPerCallObserverSeesItsLock(t *testing.T) {
	client, job := newRecorder("client"), newRecorder("job")
	c, proxies, _ := faultLab(t, 3, redlock.WithObserver(client), redlock.WithNodeTimeout(faultTimeout),
		redlock.WithTTL(400*time.Millisecond))
	ctx, cancel := context.WithCancel(ctxFor(t, 10*time.Second))
	mine, err := c.TryLock(ctx, "mine", redlock.WithObserver(job))
	if err != nil {
		t.Fatalf("TryLock with a per-call observer: %v", err)
	}
	other, err := c.TryLock(ctx, "other")
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	cancel() // the acquisitions' context ends; the Locks' own do not
	eventually(t, 2*time.Second, "both locks renewed", func() bool {
		return client.count("renewed", "mine") > 0 && client.count("renewed", "other") > 0
	})
	for _, p := range proxies[:2] {
		p.SetBlackhole(true)
	}
	<-mine.Done()
	<-other.Done()
	eventually(t, 2*time.Second, "both losses and the failed extends told", func() bool {
		return client.count("lost", "mine") == 1 && client.count("lost", "other") == 1 && job.count("lost", "mine") == 1 &&
			client.count("node:extend", "other") > 0 && job.count("node:extend", "mine") > 0
	})
	for _, kind := range []string{"start", "done", "renewed"} {
		if got := job.count(kind, "mine"); got == 0 {
			t.Errorf("per-call observer: no %s for its lock", kind)
		}
	}
	if got := job.count("", "other"); got != 0 {
		t.Errorf("per-call observer told of %d events of another call's lock", got)
	}
	client.checkContexts(t)
	job.checkContexts(t)
}

func TestNilObserverRefused(t *testing.T) {
	c, nodes, _ := lab(t, 3)
	if _, err := redlock.New(nodes, redlock.WithObserver(nil)); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "nil Observer") {
		t.Fatalf("New with a nil Observer = %v, want ErrInvalid naming it", err)
	}
	if _, err := c.TryLock(context.Background(), "k", redlock.WithLogger(nil)); !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "nil Observer") {
		t.Fatalf("TryLock with a nil Logger = %v, want ErrInvalid naming it", err)
	}
}

// A recorder is an Observer that keeps every event with its context. Its
// AcquireStart tags the context with the key, so that later events can be
// checked to come with their acquisition's context.
type recorder struct {
	redlock.NopObserver
	name   string
	mu     sync.Mutex
	events []recorded
}

type recorded struct {
	kind, key string
	ctx       context.Context
}

type recorderTag struct{ name string }

func newRecorder(name string) *recorder { return &recorder{name: name} }

func (r *recorder) add(ctx context.Context, kind, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{kind, key, ctx})
}

func (r *recorder) AcquireStart(ctx context.Context, key string, _ bool) context.Context {
	r.add(ctx, "start", key)
	return context.WithValue(ctx, recorderTag{r.name}, key)
}

func (r *recorder) AcquireDone(ctx context.Context, key string, _ *redlock.Lock, _ time.Duration, _ error) {
	r.add(ctx, "done", key)
}

func (r *recorder) Renewed(ctx context.Context, key string, _ error) { r.add(ctx, "renewed", key) }
func (r *recorder) Lost(ctx context.Context, key string, _ error)    { r.add(ctx, "lost", key) }
func (r *recorder) NodeFailed(ctx context.Context, op, key string, _ redlock.NodeVote) {
	r.add(ctx, "node:"+op, key)
}

// count returns the events of kind ("" for any) about key.
func (r *recorder) count(kind, key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.key == key && (kind == "" || e.kind == kind) {
			n++
		}
	}
	return n
}

// checkContexts checks that every event after AcquireStart came with the
// context it returned, and that the Lock's events came with a context that
// the end of the acquisition's did not cancel.
func (r *recorder) checkContexts(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.kind == "start" {
			continue
		}
		if got := e.ctx.Value(recorderTag{r.name}); got != e.key {
			t.Errorf("%s: %s of %s came with the tag of %v, want its acquisition's", r.name, e.kind, e.key, got)
		}
		if e.kind != "done" && e.kind != "node:lock" && e.ctx.Err() != nil { // not the acquisition's own
			t.Errorf("%s: %s of %s came with an ended context: %v", r.name, e.kind, e.key, e.ctx.Err())
		}
	}
}

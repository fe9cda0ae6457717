package history_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/history"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// TestObserverRecordsHolds records, on real masters, a released hold and
// one lost to Close, and reads them back.
func TestObserverRecordsHolds(t *testing.T) {
	lab := redislab.Start(t, 3)
	lab.Trust(t, redlock.TrustStart)
	var b bytes.Buffer
	w := history.NewWriter(&b)
	obs := history.NewObserver(w, "svc")
	c := testkit.Open(t, redlock.New, lab.Clients(t), redlock.WithObserver(obs), redlock.WithTTL(2*time.Second))
	ctx := testkit.Context(t, 30*time.Second)
	l, err := c.Lock(ctx, "a", redlock.WithObserver(obs.As("worker")))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lock(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	obs.Wait()
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	recs, err := history.Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ typ, client, key string }
	got := map[seen]int{}
	for _, r := range recs {
		if r.Token <= 0 || r.Until.IsZero() {
			t.Errorf("record %+v lacks token or until", r)
		}
		got[seen{r.Type, r.Client, r.Key}]++
	}
	for _, want := range []seen{
		{history.TypeGrant, "svc", "a"}, {history.TypeGrant, "worker", "a"},
		{history.TypeRelease, "svc", "a"}, {history.TypeRelease, "worker", "a"},
		{history.TypeGrant, "svc", "b"}, {history.TypeLoss, "svc", "b"},
	} {
		if got[want] != 1 {
			t.Errorf("%d records %+v, want 1 (all: %v)", got[want], want, got)
		}
	}
	if n := count(render(t, recs), "hold"); n != 3 {
		t.Errorf("%d holds drawn, want 3", n)
	}
}

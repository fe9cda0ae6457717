package lab_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/lab"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// On five containers of the lab's image and settings, a lock held by one
// Client is refused to another, and granted to it once released. Skipped
// where no Docker engine is reachable.
func TestRedlockOnContainers(t *testing.T) {
	addrs := lab.StartContainers(t, 5)
	for _, a := range addrs {
		if host, _, _ := net.SplitHostPort(a); host != "127.0.0.1" {
			t.Fatalf("container address %s; want one published and dialled on 127.0.0.1", a)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { c.Close() })
		if err := redlock.TrustStart(ctx, c); err != nil { // new masters: nothing to guard
			t.Fatalf("TrustStart %s: %v", a, err)
		}
		clients[i] = c
	}
	a, b := newClient(t, clients), newClient(t, clients)
	held, err := a.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("first TryLock: %v", err)
	}
	if _, err := b.TryLock(ctx, "job"); !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("TryLock while held = %v, want ErrNotObtained", err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	next, err := b.TryLock(ctx, "job")
	if err != nil {
		t.Fatalf("TryLock after the release: %v", err)
	}
	if next.Token() <= held.Token() {
		t.Errorf("token %d after %d: fencing tokens must grow", next.Token(), held.Token())
	}
	next.Unlock(ctx)
}

func newClient(t *testing.T, nodes []redis.UniversalClient) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, redlock.WithNodeTimeout(250*time.Millisecond))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// stopT is a testing.TB whose Skipf and Fatalf record how the call stopped
// and end the calling goroutine, as the real ones do, without ending the
// test.
type stopT struct {
	testing.TB
	how, msg string
}

func (s *stopT) Skipf(format string, args ...any) {
	s.how, s.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (s *stopT) Fatalf(format string, args ...any) {
	s.how, s.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// An image named by QUORUMLOCK_LAB_IMAGE that the engine does not have is
// never pulled: StartContainers skips, saying so — and fails with CI=true —
// without a panic and without starting anything.
func TestMissingImageSkipsOrFails(t *testing.T) {
	if !lab.DockerReachable() {
		t.Skip("no Docker engine reachable: nothing to ask for the image")
	}
	t.Setenv(lab.ImageEnv, "quorumlock.invalid/no-such-redis:0")
	for ci, want := range map[string]string{"": "skip", "true": "fatal"} {
		t.Setenv("CI", ci)
		st := &stopT{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			lab.StartContainers(st, 1)
		}()
		<-done
		if st.how != want || !strings.Contains(st.msg, "quorumlock.invalid/no-such-redis:0 not on the engine") {
			t.Errorf("CI=%q: StartContainers %s %q; want a %s naming the missing image", ci, st.how, st.msg, want)
		}
	}
}

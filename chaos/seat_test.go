package chaos_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A seat is one client of a contention: the Client its holders use, which a
// soak may hand over to a brand-new Client — a process started afresh, with
// redis clients of its own, that never met the masters — while the holders
// run. Each acquisition and hold goes through the Client seated when it
// began; a replaced Client is closed once the holds through it have ended.
// A seat is safe for concurrent use.
type seat struct {
	mu      sync.Mutex
	cur     *tenant
	retired sync.WaitGroup // replaced tenants still to close
	errs    []error        // from closing them
}

// A tenant is the Client in a seat and the holds in progress through it.
type tenant struct {
	c     *redlock.Client
	close func() error // nil for a Client that the test's Cleanup closes
	users sync.WaitGroup
}

func newSeat(c *redlock.Client) *seat { return &seat{cur: &tenant{c: c}} }

// take returns the seated Client for one acquisition and hold, and the
// function to call when that hold has ended.
func (s *seat) take() (*redlock.Client, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tn := s.cur
	tn.users.Add(1)
	return tn.c, tn.users.Done
}

// replace seats c, whose closeFn ends it (its redis clients included), and
// retires the previous Client: closed in the background once the holds
// through it have ended (each is bounded: an acquisition by attemptWait, a
// hold by its work).
func (s *seat) replace(c *redlock.Client, closeFn func() error) {
	s.mu.Lock()
	old := s.cur
	s.cur = &tenant{c: c, close: closeFn}
	s.mu.Unlock()
	s.retired.Go(func() {
		old.users.Wait()
		if old.close == nil {
			return
		}
		if err := closeWithin(old.close); err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
		}
	})
}

// closeWait bounds a Client's Close: it waits for the calls in flight, each
// bounded by the redis client's timeouts (1 s here, times its retries).
const closeWait = 10 * time.Second

// closeWithin runs closeFn, giving up after closeWait: a Close that hangs is
// reported, and the goroutine it blocks is left to the leak check.
func closeWithin(closeFn func() error) error {
	done := make(chan error, 1)
	go func() { done <- closeFn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeWait):
		return fmt.Errorf("Close did not return within %v; the library's goroutines then:\n%s", closeWait, libraryStacks())
	}
}

// libraryStacks returns, for a report, how many goroutines of package
// redlock wait in a call to a node for an outcome that came after its
// caller gave up (a channel receive in node.do), and the first of them.
func libraryStacks() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var waiting []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[chan receive") && strings.Contains(g, "quorumlock/redlock.(*node).do") {
			waiting = append(waiting, g)
		}
	}
	if len(waiting) == 0 {
		return "none waits in node.do"
	}
	return fmt.Sprintf("%d wait in node.do for a late outcome; the first:\n%s", len(waiting), waiting[0][:min(len(waiting[0]), 1500)])
}

// close waits for the holds in progress to end, closes every Client the
// seat owns, and returns the errors met since the last call. Call it once
// the holders have stopped; it may be called again.
func (s *seat) close() error {
	s.mu.Lock()
	tn := s.cur
	s.mu.Unlock()
	s.retired.Wait()
	tn.users.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if tn.close != nil {
		s.errs = append(s.errs, closeWithin(tn.close))
		tn.close = nil
	}
	err := errors.Join(s.errs...)
	s.errs = nil
	return err
}

// closeSeats closes the Clients that w's seats own, failing t on errors.
// Register it in Cleanup before w.start, so that it runs once the holders
// have stopped; it may be called again.
func closeSeats(t *testing.T, w *contention) func() {
	return func() {
		for c, st := range w.seats {
			if err := st.close(); err != nil {
				t.Errorf("closing client %d: %v", c, err)
			}
		}
	}
}

// freshClient returns a new Client over rdbs, with the scenarios' settings
// and opts, and how to close it: the Client, then rdbs.
func freshClient(t *testing.T, rdbs []redis.UniversalClient, opts ...redlock.Option) (*redlock.Client, func() error) {
	t.Helper()
	closeRedis := func() (err error) {
		for _, rdb := range rdbs {
			if e := rdb.Close(); e != nil && !errors.Is(e, redis.ErrClosed) {
				err = errors.Join(err, e)
			}
		}
		return err
	}
	c, err := redlock.New(rdbs, labOptions(opts)...)
	if err != nil {
		closeRedis()
		t.Fatalf("redlock.New: %v", err)
	}
	return c, func() error { return errors.Join(c.Close(), closeRedis()) }
}

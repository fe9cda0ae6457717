package testkit_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(dialChild) != "" { // TestMainQuietsRedis's child
		testkit.Main(m)
		return
	}
	goleak.VerifyTestMain(m)
}

func TestEventuallyReturnsOnceTrue(t *testing.T) {
	calls := 0
	testkit.Eventually(t, time.Second, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
}

func TestContextEndsAfterD(t *testing.T) {
	ctx := testkit.Context(t, time.Millisecond)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("context not done 5 s after its 1 ms")
	}
}

// A closer records whether it was closed.
type closer struct{ closed bool }

func (c *closer) Close() error { c.closed = true; return nil }

func TestOpenClosesInCleanup(t *testing.T) {
	var got *closer
	var opts []string
	t.Run("open", func(t *testing.T) {
		got = testkit.Open(t, func(nodes []redis.UniversalClient, o ...string) (*closer, error) {
			opts = o
			return &closer{}, nil
		}, nil, "a", "b")
		if got.closed {
			t.Error("closed before the test ended")
		}
	})
	if !got.closed {
		t.Error("not closed when the test ended")
	}
	if strings.Join(opts, ",") != "a,b" {
		t.Errorf("options %q, want a,b", opts)
	}
}

// Open's error path fails the test: seen through a TB that records Fatalf.
func TestOpenFailsOnError(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends this goroutine, as FailNow ends a test's
		defer close(done)
		testkit.Open(rec, func([]redis.UniversalClient, ...int) (*closer, error) { return nil, errors.New("refused") }, nil)
	}()
	<-done
	if !strings.Contains(rec.msg, "refused") {
		t.Errorf("Fatalf message %q, want the constructor's error", rec.msg)
	}
}

// A fatalRecorder is a testing.TB whose Fatalf records its message and ends
// the calling goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

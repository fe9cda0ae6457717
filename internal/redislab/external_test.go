package redislab_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// stopT is a testing.TB whose Skipf and Fatalf record the message and end
// the calling goroutine, as the real ones do, without ending the test.
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

// run calls f with a stopT over t in a goroutine of its own and returns how
// f stopped ("" when it returned) and the message.
func run(t *testing.T, f func(testing.TB)) (how, msg string) {
	st := &stopT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(st)
	}()
	<-done
	return st.how, st.msg
}

// Pointed at an outside lab (REDLOCK_ADDRS), a test that needs masters it
// starts itself skips — even with CI=true, and saying that the variable is
// set — while the same check on masters the test started lets it run.
func TestRequireOwnSkipsOnOutsideLab(t *testing.T) {
	own := redislab.Start(t, 3)
	if how, msg := run(t, own.RequireOwn); how != "" {
		t.Fatalf("RequireOwn on masters the test started: %s %q; want it to return", how, msg)
	}
	t.Setenv("REDLOCK_ADDRS", strings.Join(own.Addrs(), ","))
	t.Setenv("CI", "true")
	outside := redislab.Start(t, 3)
	for name, require := range map[string]func(testing.TB){
		"RequireOwn": outside.RequireOwn, "RequireControl": outside.RequireControl,
	} {
		how, msg := run(t, require)
		if how != "skip" || !strings.Contains(msg, "REDLOCK_ADDRS points at an outside lab") {
			t.Errorf("%s on a REDLOCK_ADDRS lab with CI=true: %s %q; want a skip that says why", name, how, msg)
		}
	}
}

// A test that starts its own servers while REDLOCK_ADDRS is set, on a
// machine without redis-server, does not tell the user to set the variable.
func TestMissingServerSkipIsTrueWithAddrsSet(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server
	t.Setenv("CI", "")
	t.Setenv("REDLOCK_ADDRS", "127.0.0.1:1")
	how, msg := run(t, func(tb testing.TB) { redislab.Start(tb, 1, redislab.WithArgs("--save", "")) })
	if how != "skip" || strings.Contains(msg, "set REDLOCK_ADDRS") {
		t.Fatalf("Start with custom arguments and no redis-server: %s %q; want a skip that does not ask to set REDLOCK_ADDRS", how, msg)
	}
}

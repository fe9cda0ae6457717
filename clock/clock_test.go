package clock_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestValidity(t *testing.T) {
	cases := []struct {
		ttl    time.Duration
		factor float64
		want   time.Duration // until − start
	}{
		{10 * time.Second, 0.01, 10*time.Second - 100*time.Millisecond - 2*time.Millisecond},
		{300 * time.Millisecond, 0.01, 300*time.Millisecond - 3*time.Millisecond - 2*time.Millisecond},
		{time.Second, 0, time.Second - 2*time.Millisecond},
	}
	for _, c := range cases {
		if got := clock.Validity(epoch, c.ttl, c.factor).Sub(epoch); got != c.want {
			t.Errorf("Validity(ttl=%v, f=%v) − start = %v, want %v", c.ttl, c.factor, got, c.want)
		}
	}
}

func TestRemainingIsTTLMinusElapsedMinusDrift(t *testing.T) {
	fc := clock.NewFake(epoch)
	start := fc.Now()
	until := clock.Validity(start, time.Second, 0.01)
	fc.Advance(400 * time.Millisecond)
	want := time.Second - 400*time.Millisecond - clock.Drift(time.Second, 0.01)
	if got := clock.Remaining(fc.Now(), until); got != want {
		t.Fatalf("Remaining = %v, want %v", got, want)
	}
	fc.Advance(time.Second)
	if got := clock.Remaining(fc.Now(), until); got >= 0 {
		t.Fatalf("Remaining after the lease = %v, want negative", got)
	}
}

func TestRealClockIsMonotonic(t *testing.T) {
	c := clock.Real()
	a := c.Now()
	// time.Time.String prints the monotonic reading as "m=±…" when present.
	if !strings.Contains(a.String(), " m=") {
		t.Fatalf("Now() = %v carries no monotonic reading", a)
	}
	if c.Since(a) < 0 {
		t.Fatal("Since went backwards")
	}
}

func TestFakeTimerFiresOnlyWhenDue(t *testing.T) {
	fc := clock.NewFake(epoch)
	tm := fc.NewTimer(100 * time.Millisecond)
	fc.Advance(99 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired 1ms early")
	default:
	}
	fc.Advance(time.Millisecond)
	select {
	case got := <-tm.C():
		if want := epoch.Add(100 * time.Millisecond); !got.Equal(want) {
			t.Fatalf("timer delivered %v, want %v", got, want)
		}
	default:
		t.Fatal("timer did not fire when due")
	}
}

func TestFakeStopAndReset(t *testing.T) {
	fc := clock.NewFake(epoch)
	tm := fc.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer = false, want true")
	}
	if tm.Stop() {
		t.Fatal("second Stop = true, want false")
	}
	if tm.Reset(10 * time.Millisecond) {
		t.Fatal("Reset of a stopped timer = true, want false")
	}
	fc.Advance(10 * time.Millisecond)
	select {
	case <-tm.C():
	default:
		t.Fatal("reset timer did not fire")
	}
}

func TestFakeAfterFuncRunsInOrder(t *testing.T) {
	fc := clock.NewFake(epoch)
	var order []int
	done := make(chan int, 2)
	fc.AfterFunc(20*time.Millisecond, func() { done <- 2 })
	fc.AfterFunc(10*time.Millisecond, func() { done <- 1 })
	fc.Advance(10 * time.Millisecond)
	order = append(order, <-done)
	fc.Advance(10 * time.Millisecond)
	order = append(order, <-done)
	if order[0] != 1 || order[1] != 2 {
		t.Fatalf("AfterFunc order = %v, want [1 2]", order)
	}
}

func TestWaitForSleepers(t *testing.T) {
	fc := clock.NewFake(epoch)
	var fired atomic.Bool
	go func() {
		tm := fc.NewTimer(time.Minute)
		<-tm.C()
		fired.Store(true)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fc.WaitForSleepers(ctx, 1); err != nil {
		t.Fatalf("WaitForSleepers: %v", err)
	}
	fc.Advance(time.Minute)
	for !fired.Load() {
		if ctx.Err() != nil {
			t.Fatal("sleeper was not woken by Advance")
		}
		time.Sleep(time.Millisecond) // polling a condition, bounded by ctx
	}
}

func TestWaitForSleepersHonoursContext(t *testing.T) {
	fc := clock.NewFake(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fc.WaitForSleepers(ctx, 1); err != context.Canceled {
		t.Fatalf("WaitForSleepers with a cancelled ctx = %v, want context.Canceled", err)
	}
}

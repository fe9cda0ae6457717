package redlock

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
)

// The timing checks: the round trip against the node timeout, and the
// rate of the server's clock against the local monotonic clock.

// rttPings is how many PINGs the round-trip check sends, one at a time.
const rttPings = 50

// rtt checks that the p99 round trip to s fits well within the node
// timeout: a timeout the network cannot meet makes calls fail at random.
func (sc *serverCheck) rtt(ctx context.Context, cfg *config, s server) {
	rtts := make([]time.Duration, 0, rttPings)
	for range rttPings {
		start := time.Now()
		if err := s.rdb.Ping(ctx).Err(); err != nil {
			sc.add(s, "rtt", SeverityWarn, "PING: "+oneLine(err.Error()), "answers PING", "cannot time the round trip")
			return
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	p99 := rtts[(len(rtts)*99+99)/100-1]
	got := fmt.Sprintf("p99 %v, median %v over %d PINGs", p99.Round(time.Microsecond), rtts[len(rtts)/2].Round(time.Microsecond), len(rtts))
	want := fmt.Sprintf("p99 under half the node timeout %v", cfg.nodeTimeout)
	switch {
	case p99 >= cfg.nodeTimeout:
		sc.add(s, "rtt", SeverityFail, got, want,
			"calls slower than the node timeout count as failed: locks fail at random; raise the node timeout (WithNodeTimeout, --node-timeout)")
	case p99 >= cfg.nodeTimeout/2:
		sc.add(s, "rtt", SeverityWarn, got, want,
			"little headroom: a busier network or server makes calls miss the node timeout")
	default:
		sc.add(s, "rtt", SeverityOK, got, want, "calls finish well within the node timeout")
	}
}

// A timeReading is one TIME of a server, placed at the middle of its round
// trip on the local monotonic clock.
type timeReading struct {
	server time.Duration // the server's clock since the epoch
	local  time.Time     // when, locally
	rtt    time.Duration
}

// readTime reads s's TIME a few times and keeps the reading of the
// shortest round trip.
func readTime(ctx context.Context, s server) (timeReading, error) {
	var best timeReading
	for i := range 5 {
		start := time.Now()
		v, err := s.rdb.Do(ctx, "TIME").StringSlice()
		rtt := time.Since(start)
		if err != nil {
			return best, err
		}
		if len(v) != 2 {
			return best, fmt.Errorf("TIME answered %v", v)
		}
		sec, err1 := strconv.ParseInt(v[0], 10, 64)
		usec, err2 := strconv.ParseInt(v[1], 10, 64)
		if err1 != nil || err2 != nil {
			return best, fmt.Errorf("TIME answered %v", v)
		}
		if i == 0 || rtt < best.rtt {
			best = timeReading{server: time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond,
				local: start.Add(rtt / 2), rtt: rtt}
		}
	}
	return best, nil
}

// clock checks that s's clock runs at the local clock's rate within what
// the drift factor allows: a lease of TTL may end on the master up to
// Drift(TTL) early, so the rates may differ by Drift(TTL)/TTL at most.
func (sc *serverCheck) clock(ctx context.Context, cfg *config, s server) {
	if cfg.clockSample == 0 {
		return
	}
	first, err := readTime(ctx, s)
	if err == nil {
		t := time.NewTimer(cfg.clockSample)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	var last timeReading
	if err == nil {
		last, err = readTime(ctx, s)
	}
	if err != nil {
		sc.add(s, "clock", SeverityWarn, "TIME: "+oneLine(err.Error()), "answers TIME", "cannot measure its clock's rate")
		return
	}
	sc.judgeRate(s, cfg, first, last)
}

// judgeRate adds the clock finding of two readings of s.
func (sc *serverCheck) judgeRate(s server, cfg *config, first, last timeReading) {
	elapsed := last.local.Sub(first.local)
	rate := float64(last.server-first.server) / float64(elapsed)
	// Each reading may sit anywhere within its round trip.
	margin := float64(first.rtt+last.rtt) / 2 / float64(elapsed)
	allowed := float64(clock.Drift(cfg.ttl, cfg.driftFactor)) / float64(cfg.ttl)
	dev := math.Abs(rate - 1)
	got := fmt.Sprintf("rate %.5f ± %.5f of the local clock over %v", rate, margin, elapsed.Round(time.Millisecond))
	want := fmt.Sprintf("within 1 ± %.5f (drift factor %v + %v per TTL %v)", allowed, cfg.driftFactor, clock.MinDrift, cfg.ttl)
	switch {
	case dev-margin > allowed:
		sc.add(s, "clock", SeverityFail, got, want,
			"a master whose clock runs fast ends leases early (and a slow one late) by more than the drift allowance: a second holder may be granted the lock while the first still trusts its validity")
	case dev+margin > allowed:
		sc.add(s, "clock", SeverityWarn, got, want, "too close to the drift allowance to tell: sample longer (WithClockSample, --clock-sample)")
	default:
		sc.add(s, "clock", SeverityOK, got, want, "its leases end when the client expects")
	}
}

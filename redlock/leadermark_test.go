package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/faultproxy"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A leader's mark does not decay with restarts: the masters that restarted
// empty get the lock again from renewals, and the mark with it, so that
// Leader still finds a majority once the only master left from the
// campaign is gone.
func TestLeaderMarkRepairedAfterRestarts(t *testing.T) {
	ttl := time.Second
	c, nodes, lab := lab(t, 3, redlock.WithTTL(ttl))
	lab.RequireControl(t)
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a", redlock.WithTTL(ttl))
	defer l.Unlock(ctx)
	lab.Restart(t, true, 1, 2)
	lock := redlock.Keys(redlock.DefaultPrefix, "job").Lock
	eventually(t, 10*ttl, "the mark written again on the restarted masters", func() bool {
		for _, n := range nodes[1:] {
			if n.HGet(ctx, lock, "term").Val() == "" {
				return false
			}
		}
		return true
	})
	nodes[0].Del(ctx, lock)
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l.Token()})
}

// Every Campaign is an owner of its own: two campaigns of one WithOwner
// owner (the Client's default here) never share a leadership, as two
// nested holds of that owner would.
func TestCampaignIgnoresOwner(t *testing.T) {
	c, _, _ := lab(t, 3, redlock.WithOwner("svc"))
	ctx := ctxFor(t, 30*time.Second)
	l := campaign(t, ctx, c, "job", "a")
	defer l.Unlock(ctx)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if l2, err := c.Campaign(short, "job", "b", redlock.WithOwner("svc")); !errors.Is(err, redlock.ErrNotObtained) {
		if err == nil {
			l2.Unlock(ctx)
		}
		t.Fatalf("second Campaign of one owner = %v, want ErrNotObtained while the first leads", err)
	}
	requireLeader(t, ctx, c, "job", redlock.Leader{Value: "a", Term: l.Token()})
}

// A Campaign whose ctx ends while its leadership is being recorded (replies
// delayed: the marks land, the answers come late) is still told: nobody
// is ever reported leader — here by Observe on undelayed masters — without
// their Campaign returning the leadership.
func TestCampaignToldWhatObserversSee(t *testing.T) {
	const delay = 300 * time.Millisecond
	c, proxies, direct := faultLab(t, 3, redlock.WithNodeTimeout(2*time.Second))
	ctx := ctxFor(t, time.Minute)
	warm := campaign(t, ctx, c, "warm", "w") // connections pooled before the delay
	warm.Unlock(ctx)
	seen := observe(t, ctx, newClient(t, direct), "job")
	for _, p := range proxies {
		p.SetLatency(0, delay)
	}
	// The attempt, the fencing write-back and the recording take a delay
	// each: the ctx ends halfway through the recording.
	for try := range 5 {
		short, cancel := context.WithTimeout(ctx, 5*delay/2)
		l, err := c.Campaign(short, "job", fmt.Sprint("try ", try))
		cancel()
		if err == nil {
			t.Logf("try %d led", try)
			l.Unlock(ctx)
			return
		}
		t.Logf("try %d: %v", try, err)
		select {
		case s := <-seen:
			t.Fatalf("Campaign failed (%v) but Observe saw %q lead at term %d", err, s.Value, s.Term)
		case <-time.After(delay):
		}
	}
	t.Skip("no Campaign reached the recording before its ctx ended (a loaded machine)")
}

// slowAfterGrant delays every request through proxies once armed, from
// the moment an acquisition returns its lock: Campaign's recording round
// then runs on slow masters.
type slowAfterGrant struct {
	redlock.NopObserver
	armed   atomic.Bool
	proxies []*faultproxy.Proxy
	delay   time.Duration
}

func (s *slowAfterGrant) AcquireDone(_ context.Context, _ string, l *redlock.Lock, _ time.Duration, _ error) {
	if l != nil && s.armed.CompareAndSwap(true, false) {
		for _, p := range s.proxies {
			p.SetLatency(s.delay, 0)
		}
	}
}

// A Campaign whose recording calls time out on a majority — the requests
// are delayed past the node timeout, so the marks land after the calls
// failed and Observe may report the leader — does not give up when its ctx
// ends: it records again until a round wins and returns the leadership.
// Before, it returned ErrNotObtained and resigned while the marks stood.
func TestCampaignOutlivesCtxWhileMarksMayStand(t *testing.T) {
	slow := &slowAfterGrant{delay: 4 * faultTimeout}
	c, proxies, direct := faultLab(t, 3, redlock.WithNodeTimeout(faultTimeout), redlock.WithObserver(slow))
	slow.proxies = proxies
	ctx := ctxFor(t, time.Minute)
	warm := campaign(t, ctx, c, "warm", "w") // connections pooled before the delay
	warm.Unlock(ctx)
	slow.armed.Store(true)
	short, cancel := context.WithTimeout(ctx, 3*slow.delay)
	defer cancel()
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := c.Campaign(short, "job", "v")
		done <- result{l, err}
	}()
	<-short.Done()
	if slow.armed.Load() {
		t.Fatal("the campaign never acquired its lock before its ctx ended")
	}
	for _, p := range proxies {
		p.SetLatency(0, 0)
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("Campaign did not return")
	}
	if r.err != nil {
		t.Fatalf("Campaign = %v; want the leadership whose marks may stand", r.err)
	}
	defer r.l.Unlock(ctx)
	requireLeader(t, ctx, newClient(t, direct), "job", redlock.Leader{Value: "v", Term: r.l.Token()})
}

package redlock

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// A bell wakes a Client's waiters when a lock they wait for is released:
// Unlock publishes on the key's channel the owner first in line, and the bell
// wakes that waiter (every waiter, for an empty message). It listens with one
// subscription connection per node, shared by all of the Client's waiters,
// opened with the first waiter and closed with the last. A wake-up may be
// lost (a node down, a subscription not yet active): waiters keep their
// backoff as the fallback, so a lost wake-up costs a delay, never a hang.
type bell struct {
	c       *Client
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]string // by channel: wake-up → owner
	ears    []*ear                              // one per node while anyone waits
}

// An ear is one node's subscription: a connection, a goroutine that applies
// (un)subscriptions in order — they may block on a dial, never a waiter — and
// a goroutine that reads the messages and rings the bell on each. Every
// step that may set up the connection (go-redis does it under the
// subscription's lock, which its Close waits for) runs under a deadline of
// subscribeTimeout: go-redis's own reader (PubSub.Channel) would set it up
// under no deadline but the client's read timeout, and keep Close waiting
// that long (see DESIGN.md, "go-redis facts that bite").
type ear struct {
	ps   *redis.PubSub
	ops  chan subscription
	quit chan struct{} // closed when nobody waits any more: the ear stops
	// live are the channels the server confirmed subscribed on this
	// connection, until it confirms their unsubscription or the
	// connection fails; guarded by the bell's mutex.
	live map[string]bool
}

type subscription struct {
	channel string
	on      bool
}

// subscribeTimeout bounds one SUBSCRIBE or UNSUBSCRIBE on one node — with
// the dial and handshake of the subscription's connection, during which
// go-redis holds the subscription's lock, and so holds its Close: the node
// timeout plus its late window, as every other wait on a node.
func (b *bell) subscribeTimeout() time.Duration {
	return b.c.cfg.nodeTimeout + master.LateWindow(b.c.cfg.nodeTimeout)
}

// listen registers owner's waiter for channels — one per key it waits for —
// and returns the channel it is woken on (by a message on any of them), and
// the function that unregisters it. It never blocks on the network.
func (b *bell) listen(channels []string, owner string) (<-chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ears == nil {
		b.open()
	}
	for _, channel := range channels {
		set := b.waiters[channel]
		if set == nil {
			set = map[chan struct{}]string{}
			b.waiters[channel] = set
			b.tell(subscription{channel, true})
		}
		set[wake] = owner
	}
	return wake, func() {
		for _, channel := range channels {
			b.forget(channel, wake)
		}
	}
}

func (b *bell) forget(channel string, wake chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.waiters[channel]
	delete(set, wake)
	if len(set) > 0 {
		return
	}
	delete(b.waiters, channel)
	for _, e := range b.ears { // until subscribed again and confirmed
		delete(e.live, channel)
	}
	if len(b.waiters) > 0 {
		b.tell(subscription{channel, false})
		return
	}
	for _, e := range b.ears { // nobody waits: drop the connections
		close(e.quit)
		close(e.ops)
		b.c.spawn(func() { e.ps.Close() })
	}
	b.ears = nil
}

// open subscribes on every node: one ear each, with its goroutines. b.mu is
// held, inside a Client operation.
func (b *bell) open() {
	b.ears = make([]*ear, len(b.c.nodes))
	for i, n := range b.c.nodes {
		e := &ear{ps: n.master.Redis().Subscribe(context.Background()), ops: make(chan subscription, 256), quit: make(chan struct{})}
		b.ears[i] = e
		timeout := b.subscribeTimeout()
		b.c.spawn(func() { e.apply(timeout) })
		b.c.spawn(func() { e.hear(b, timeout) })
	}
}

// tell queues the (un)subscription s on every node's ear. A full queue (a
// node hung for a long time) drops it: the waiters fall back to their
// backoff.
func (b *bell) tell(s subscription) {
	for _, e := range b.ears {
		select {
		case e.ops <- s:
		default:
		}
	}
}

// apply runs the queued (un)subscriptions in order, each under timeout,
// until the ear stops: what is still queued then is dropped.
func (e *ear) apply(timeout time.Duration) {
	for s := range e.ops {
		if e.stopped() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		if s.on {
			e.ps.Subscribe(ctx, s.channel)
		} else {
			e.ps.Unsubscribe(ctx, s.channel)
		}
		cancel()
	}
}

// hear reads the subscription's messages and rings b on each, until the
// ear stops. Each read — and the connection it sets up again after a
// failure, resubscribing — runs under timeout: a read that times out keeps
// the connection and simply reads again; after any other failure (the
// server gone) it waits timeout before the next try.
func (e *ear) hear(b *bell, timeout time.Duration) {
	for !e.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		msg, err := e.ps.ReceiveTimeout(ctx, timeout)
		cancel()
		if m, ok := msg.(*redis.Message); ok && err == nil {
			b.ring(m.Channel, m.Payload)
			continue
		}
		if m, ok := msg.(*redis.Subscription); ok && err == nil {
			b.confirmed(e, m)
			continue
		}
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		// The connection failed: what it misses until go-redis subscribes
		// again on a new one is lost.
		b.deaf(e)
		pause := time.NewTimer(timeout)
		select {
		case <-e.quit:
		case <-pause.C:
		}
		pause.Stop()
	}
}

// stopped reports whether nobody waits any more.
func (e *ear) stopped() bool {
	select {
	case <-e.quit:
		return true
	default:
		return false
	}
}

// ring wakes the waiters of channel whose owner is first in line.
func (b *bell) ring(channel, first string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for wake, owner := range b.waiters[channel] {
		if first != "" && owner != first {
			continue
		}
		select {
		case wake <- struct{}{}:
		default: // already rung
		}
	}
}

// confirmed records the server's confirmation m of a (un)subscription on
// e's connection: from a subscription's confirmation on, every message
// published on its channel reaches e.
func (b *bell) confirmed(e *ear, m *redis.Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case m.Kind == "subscribe" && b.waiters[m.Channel] != nil:
		if e.live == nil {
			e.live = map[string]bool{}
		}
		e.live[m.Channel] = true
	case m.Kind == "unsubscribe":
		delete(e.live, m.Channel)
	}
}

// deaf forgets e's confirmations: its connection failed.
func (b *bell) deaf(e *ear) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.live = nil
}

// hears reports whether a release announced on any of channels reaches
// this Client's waiters: every channel is confirmed subscribed on a
// majority of the nodes, so that a release, which reaches a majority,
// is announced on at least one of them.
func (b *bell) hears(channels []string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range channels {
		n := 0
		for _, e := range b.ears {
			if e.live[ch] {
				n++
			}
		}
		if n < len(b.c.nodes)/2+1 {
			return false
		}
	}
	return true
}

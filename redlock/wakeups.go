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

// wakeups wakes a Client's waiters when a lock they wait for is released:
// Unlock publishes on the key's channel the owner first in line, and
// wakeups wakes that waiter (every waiter, for an empty message). It
// subscribes with one connection per node, shared by all of the Client's
// waiters, opened with the first waiter and closed with the last. A
// wake-up may be lost (a node down, a subscription not yet active):
// waiters keep their backoff as the fallback, so a lost wake-up costs a
// delay, never a hang.
type wakeups struct {
	c           *Client
	mu          sync.Mutex
	waiters     map[string]map[chan struct{}]string // by channel: wake-up → owner
	subscribers []*subscriber                       // one per node while anyone waits
}

// A subscriber is one node's subscription: a connection, a goroutine that
// applies (un)subscriptions in order — they may block on a dial, never a
// waiter — and a goroutine that reads the messages and wakes the waiters
// on each. Every step that may set up the connection (go-redis does it
// under the subscription's lock, which its Close waits for) runs under a
// deadline of subscribeTimeout: go-redis's own reader (PubSub.Channel)
// would set it up under no deadline but the client's read timeout, and
// keep Close waiting that long (see DESIGN.md, "go-redis facts that
// bite").
type subscriber struct {
	ps   *redis.PubSub
	ops  chan subscription
	quit chan struct{} // closed when nobody waits any more: the subscriber stops
	// live are the channels the server confirmed subscribed on this
	// connection, until it confirms their unsubscription or the
	// connection fails; guarded by the wakeups' mutex.
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
func (w *wakeups) subscribeTimeout() time.Duration {
	return w.c.cfg.nodeTimeout + master.LateWindow(w.c.cfg.nodeTimeout)
}

// register registers owner's waiter for channels — one per key it waits
// for — and returns the channel it is woken on (by a message on any of
// them), and the function that unregisters it. It never blocks on the
// network.
func (w *wakeups) register(channels []string, owner string) (<-chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subscribers == nil {
		w.open()
	}
	for _, channel := range channels {
		set := w.waiters[channel]
		if set == nil {
			set = map[chan struct{}]string{}
			w.waiters[channel] = set
			w.request(subscription{channel, true})
		}
		set[wake] = owner
	}
	return wake, func() {
		for _, channel := range channels {
			w.unregister(channel, wake)
		}
	}
}

func (w *wakeups) unregister(channel string, wake chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := w.waiters[channel]
	delete(set, wake)
	if len(set) > 0 {
		return
	}
	delete(w.waiters, channel)
	for _, s := range w.subscribers { // until subscribed again and confirmed
		delete(s.live, channel)
	}
	if len(w.waiters) > 0 {
		w.request(subscription{channel, false})
		return
	}
	for _, s := range w.subscribers { // nobody waits: drop the connections
		close(s.quit)
		close(s.ops)
		w.c.spawn(func() { s.ps.Close() })
	}
	w.subscribers = nil
}

// open subscribes on every node: one subscriber each, with its goroutines.
// w.mu is held, inside a Client operation.
func (w *wakeups) open() {
	w.subscribers = make([]*subscriber, len(w.c.nodes))
	for i, n := range w.c.nodes {
		s := &subscriber{ps: n.master.Redis().Subscribe(context.Background()), ops: make(chan subscription, 256), quit: make(chan struct{})}
		w.subscribers[i] = s
		timeout := w.subscribeTimeout()
		w.c.spawn(func() { s.apply(timeout) })
		w.c.spawn(func() { s.read(w, timeout) })
	}
}

// request hands the (un)subscription op to every node's subscriber. A
// full buffer (a node hung for a long time) drops it: the waiters fall
// back to their backoff.
func (w *wakeups) request(op subscription) {
	for _, s := range w.subscribers {
		select {
		case s.ops <- op:
		default:
		}
	}
}

// apply runs the requested (un)subscriptions in order, each under
// timeout, until the subscriber stops: what is still buffered then is
// dropped.
func (s *subscriber) apply(timeout time.Duration) {
	for op := range s.ops {
		if s.stopped() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		if op.on {
			s.ps.Subscribe(ctx, op.channel)
		} else {
			s.ps.Unsubscribe(ctx, op.channel)
		}
		cancel()
	}
}

// read reads the subscription's messages and has w wake the waiters on
// each, until the subscriber stops. Each read — and the connection it sets
// up again after a failure, resubscribing — runs under timeout: a read
// that times out keeps the connection and simply reads again; after any
// other failure (the server gone) it waits timeout before the next try.
func (s *subscriber) read(w *wakeups, timeout time.Duration) {
	for !s.stopped() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		msg, err := s.ps.ReceiveTimeout(ctx, timeout)
		cancel()
		if m, ok := msg.(*redis.Message); ok && err == nil {
			w.wakeFirst(m.Channel, m.Payload)
			continue
		}
		if m, ok := msg.(*redis.Subscription); ok && err == nil {
			w.confirmed(s, m)
			continue
		}
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		// The connection failed: what it misses until go-redis subscribes
		// again on a new one is lost.
		w.disconnected(s)
		pause := time.NewTimer(timeout)
		select {
		case <-s.quit:
		case <-pause.C:
		}
		pause.Stop()
	}
}

// stopped reports whether nobody waits any more.
func (s *subscriber) stopped() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// wakeFirst wakes the waiters of channel whose owner is first in line.
func (w *wakeups) wakeFirst(channel, first string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for wake, owner := range w.waiters[channel] {
		if first != "" && owner != first {
			continue
		}
		select {
		case wake <- struct{}{}:
		default: // already woken
		}
	}
}

// confirmed records the server's confirmation m of a (un)subscription on
// s's connection: from a subscription's confirmation on, every message
// published on its channel reaches s.
func (w *wakeups) confirmed(s *subscriber, m *redis.Subscription) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case m.Kind == "subscribe" && w.waiters[m.Channel] != nil:
		if s.live == nil {
			s.live = map[string]bool{}
		}
		s.live[m.Channel] = true
	case m.Kind == "unsubscribe":
		delete(s.live, m.Channel)
	}
}

// disconnected forgets s's confirmations: its connection failed.
func (w *wakeups) disconnected(s *subscriber) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.live = nil
}

// reaches reports whether a release announced on any of channels reaches
// this Client's waiters: every channel is confirmed subscribed on a
// majority of the nodes, so that a release, which reaches a majority,
// is announced on at least one of them.
func (w *wakeups) reaches(channels []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range channels {
		n := 0
		for _, s := range w.subscribers {
			if s.live[ch] {
				n++
			}
		}
		if n < len(w.c.nodes)/2+1 {
			return false
		}
	}
	return true
}

package redlocktest

import (
	"net"
	"slices"
	"sync"
	"time"
)

// A conn is a client's connection as its master's process sees it. What the
// client sends reaches the process only while the master is not frozen;
// what the process replies is queued, and delivered in order once the
// master's latency has passed since it was written and the master is not
// frozen. A conn is safe for concurrent use.
type conn struct {
	net.Conn
	m    *master
	done chan struct{} // closed by Close
	once sync.Once

	mu      sync.Mutex
	replies []reply
	ready   chan struct{} // signalled when a reply is queued
}

// A reply is bytes the process wrote, and when they may be delivered.
type reply struct {
	data []byte
	at   time.Time
}

func newConn(nc net.Conn, m *master) *conn {
	return &conn{Conn: nc, m: m, done: make(chan struct{}), ready: make(chan struct{}, 1)}
}

// Read reads what the client sent, and holds it while the master is frozen.
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n == 0 {
		return n, err
	}
	if werr := c.wait(); werr != nil {
		return 0, werr
	}
	return n, err
}

// Write queues a reply; it never blocks the process.
func (c *conn) Write(b []byte) (int, error) {
	select {
	case <-c.done:
		return 0, connClosed
	default:
	}
	r := reply{data: slices.Clone(b), at: time.Now().Add(c.m.delay())}
	c.mu.Lock()
	c.replies = append(c.replies, r)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
	return len(b), nil
}

// deliver writes the queued replies to the client, each at its time, until
// the conn is closed.
func (c *conn) deliver() {
	for {
		r, ok := c.next()
		if !ok || !c.sleepUntil(r.at) || c.wait() != nil {
			return
		}
		if _, err := c.Conn.Write(r.data); err != nil {
			c.Close()
			return
		}
	}
}

// next waits for the oldest queued reply; false once the conn is closed.
func (c *conn) next() (reply, bool) {
	for {
		c.mu.Lock()
		if len(c.replies) > 0 {
			r := c.replies[0]
			c.replies = c.replies[1:]
			c.mu.Unlock()
			return r, true
		}
		c.mu.Unlock()
		select {
		case <-c.ready:
		case <-c.done:
			return reply{}, false
		}
	}
}

// sleepUntil waits until t; false if the conn closed first.
func (c *conn) sleepUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-c.done:
		return false
	}
}

// wait returns once the master is not frozen, or connClosed once the conn
// is closed.
func (c *conn) wait() error {
	for {
		gate := c.m.gate()
		if gate == nil {
			return nil
		}
		select {
		case <-gate:
		case <-c.done:
			return connClosed
		}
	}
}

// Close closes the connection; the delivery ends, and replies not yet
// delivered are dropped, as a process's are when it dies.
func (c *conn) Close() error {
	err := connClosed
	c.once.Do(func() {
		close(c.done)
		err = c.Conn.Close()
	})
	return err
}

package autopipe

import (
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// How long a sender holds one connection (see lane) before it hands it back
// to the pool and takes one again for its next batch:
//
//   - heldFor in all: under RESP3, go-redis peeks at a connection's socket
//     for push notifications (a system call) before each use unless the
//     connection went back to the pool less than 5 s ago;
//   - heldIdle since its last batch ended: the pool checks a connection's
//     health as it hands it out (a peek at the socket), which finds one that
//     the server closed meanwhile — a restart, a client timeout — before a
//     batch is written on it and fails. A connection in steady use is not
//     checked, as none is while in use.
const (
	heldFor  = 4 * time.Second
	heldIdle = 100 * time.Millisecond
)

// lane gives the sender of b what it writes its batches on. With
// WithHeldConnections, over a plain
// *redis.Client that never retries (MaxRetries -1), that is a connection
// of its own, held from one batch to the next (redis.Conn): a batch then
// takes no connection from the pool, and pays neither the pool's health
// check (a peek at the socket, a system call, on every take) nor its
// allocations. A client that retries keeps the pool, whose retries take a
// fresh connection where a held one would stay broken; other clients
// (ClusterClient, Ring) split each batch by node, on their pools. (go-redis
// turns MaxRetries -1 into 0 in the client's options.) Give it a client
// with maintenance notifications off, as the library's dedicated clients
// are: go-redis's auto mode races between connections set up at once.
func (p *Pipe) lane(b *batch) {
	if rc, ok := p.rdb.(*redis.Client); ok && p.held && rc.Options().MaxRetries == 0 {
		b.conn, b.taken = rc.Conn(), time.Now()
		b.used = b.taken
		b.pl = b.conn.Pipeline()
		return
	}
	b.pl = p.rdb.Pipeline()
}

// freshen hands b's connection back to the pool and takes one again once
// it has been held heldFor, or idle heldIdle (a batch is about to go out at
// now).
func (p *Pipe) freshen(b *batch, now time.Time) {
	if b.conn != nil && (now.Sub(b.taken) >= heldFor || now.Sub(b.used) >= heldIdle) {
		_ = b.conn.Close()
		p.lane(b)
	}
}

// mend replaces b's connection after a batch that failed on it — err is
// not a Redis error reply to a command, or the connection was not set up:
// go-redis has dropped it, and a held connection once broken fails every
// later use.
func (p *Pipe) mend(b *batch, err error, setup bool) {
	if b.conn == nil || err == nil {
		return
	}
	var reply redis.Error
	if !setup && errors.As(err, &reply) {
		return
	}
	_ = b.conn.Close()
	p.lane(b)
}

// end releases what the sender of b holds: its timers and its connection,
// which goes back to the client's pool (or is dropped if broken).
func (b *batch) end() {
	b.overdue.Stop()
	b.ctx.disarm()
	if b.conn != nil {
		_ = b.conn.Close()
	}
}

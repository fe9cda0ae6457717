package autopipe

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// States of a call. It starts pending; exactly one side moves it on: the
// sender to answered (the caller then takes the outcome), or the caller to
// abandoned (the outcome then goes to the late callback).
const (
	pending int32 = iota
	answered
	abandoned
)

// A call is one command on its way through a Pipe. Calls are pooled: one
// is reused once both its caller and its sender are done with it.
type call struct {
	cmd   *redis.Cmd
	pre   *redis.Cmd      // written just before cmd in its batch (DoLateAfter), reply dropped; or nil
	ctx   context.Context // the caller's, checked when the batch forms; nil once taken
	late  func(*redis.Cmd)
	state atomic.Int32
	done  chan struct{} // cap 1; a token once answered
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func newCall(ctx context.Context, cmd *redis.Cmd, late func(*redis.Cmd)) *call {
	c := callPool.Get().(*call)
	c.cmd, c.ctx, c.late = cmd, ctx, late
	c.state.Store(pending)
	return c
}

func (c *call) free() {
	c.cmd, c.pre, c.ctx, c.late = nil, nil, nil, nil
	callPool.Put(c)
}

// Do sends one command, args as for redis.Client.Do, in the next batch to
// the Pipe's client, and returns its result as rdb.Do would: once its reply
// arrives, or once ctx ends, whichever comes first.
//
// When ctx ends first, Do returns at once with a new *redis.Cmd whose Err()
// matches ErrAbandoned and ctx.Err(): the outcome is unknown — the command
// may have been executed. Its reply is still read when it comes (the connection stays in
// step) and dropped; use DoLate to receive it.
//
// A command whose ctx has ended before its batch forms is not sent: its
// error then matches both ErrNotSent and ctx's error. So a caller that
// needs a follow-up after a timeout (an undo, a release) must send it under
// a fresh ctx. After Close, Do sends nothing and returns ErrClosed.
//
// The command keeps args, as rdb.Do's does: they must not change while it
// may still be written — after Do returns ErrAbandoned, that is until its
// late outcome (DoLate) or for good.
func (p *Pipe) Do(ctx context.Context, args ...any) *redis.Cmd {
	return p.DoLate(ctx, nil, args...)
}

// DoLate is Do, and when Do's result matches ErrAbandoned — the caller
// stopped waiting before the command's outcome was known — late is later
// called exactly once, on a goroutine of its own, with the command's real
// outcome: its reply, a Redis error, a connection error (outcome still
// unknown), or an error matching ErrNotSent if it was never written after
// all. In every other case late is never called. Close waits for late
// callbacks to return; late may call Do but must not call Close.
//
// This is how a caller undoes a write whose reply came after it gave up,
// such as a lock granted by a slow node.
func (p *Pipe) DoLate(ctx context.Context, late func(*redis.Cmd), args ...any) *redis.Cmd {
	return p.DoLateAfter(ctx, late, nil, args...)
}

// DoLateAfter is DoLate, with pre (when not empty) written just before the
// command, in the same batch and so on the same connection, with nothing
// between them: a command that needs a connection state set by the one
// before it, such as ASKING before a command redirected by a Redis
// Cluster's ASK. The reply to pre is read and dropped; the outcome is the
// command's alone (a connection error fails both).
func (p *Pipe) DoLateAfter(ctx context.Context, late func(*redis.Cmd), pre []any, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	if len(args) == 0 {
		cmd.SetErr(errNoArgs)
		return cmd
	}
	if err := ctx.Err(); err != nil {
		cmd.SetErr(notSent(err))
		return cmd
	}
	c := newCall(ctx, cmd, late)
	if len(pre) > 0 {
		c.pre = redis.NewCmd(ctx, pre...)
	}
	if !p.enqueue(c) {
		c.free()
		cmd.SetErr(closedNotSent)
		return cmd
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		if c.state.CompareAndSwap(pending, abandoned) {
			// The sender owns c from now on, and frees it.
			gaveUp := redis.NewCmd(ctx, args...)
			gaveUp.SetErr(&abandonedError{cause: ctx.Err()})
			return gaveUp
		}
		<-c.done // answered just now: the outcome is ours after all
	}
	c.free()
	return cmd
}

// enqueue adds c to the next batch and makes sure a sender will take it:
// a parked one is woken, or a new one started while fewer than
// maxInFlight run; otherwise every sender is busy and the first to finish
// takes the queue. It reports false if the Pipe is closed.
func (p *Pipe) enqueue(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.calls.Add(1)
	p.queue = append(p.queue, c)
	switch {
	case p.parked > 0:
		p.parked--
		p.wake <- struct{}{} // never blocks: one slot per sender
	case p.senders < p.maxInFlight:
		p.startLocked()
	}
	return true
}

// startLocked starts a sender in a free slot. p.mu is held.
func (p *Pipe) startLocked() {
	p.senders++
	p.wg.Add(1)
	go p.send()
}

// deliver hands c's outcome, now in c.cmd, to its caller, or to its late
// callback if the caller has stopped waiting.
func (p *Pipe) deliver(c *call) {
	c.ctx = nil
	if c.state.CompareAndSwap(pending, answered) {
		c.done <- struct{}{} // c belongs to the caller from here on
		return
	}
	p.late.Add(1)
	cmd, late := c.cmd, c.late
	c.free()
	if late != nil {
		p.wg.Add(1) // the sender calling deliver is counted: Close is not past Wait
		go func() {
			defer p.wg.Done()
			late(cmd)
		}()
	}
}

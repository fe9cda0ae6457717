package autopipe

import (
	"runtime"
	"time"

	"github.com/redis/go-redis/v9"
)

// A batch is a sender's working set, reused from one round trip to the next.
type batch struct {
	pl    redis.Pipeliner // reusable: Exec empties it
	conn  *redis.Conn     // the sender's own connection (see lane), or nil
	taken time.Time       // when conn was taken from the pool
	used  time.Time       // when its last batch ended
	calls []*call         // taken from the queue, swapped with it
	cmds  []redis.Cmder   // the commands of calls still wanted

	ctx     *batchCtx   // the context of every batch of the sender
	overdue *time.Timer // fires at latest: the batch's callers have all gone

	// Guarded by Pipe.mu.
	inFlight bool
	latest   time.Time // when the batch becomes overdue (Pipe.due); zero if never
	released bool      // the batch went overdue and gave up its sender's slot
}

// send is a sending goroutine: it takes the whole queue as one batch, sends
// it in one round trip and hands out the replies, then takes the next,
// until it has waited idleTimeout for work or the Pipe is closed.
func (p *Pipe) send() {
	defer p.wg.Done()
	b := &batch{ctx: newBatchCtx()}
	p.lane(b)
	b.overdue = time.AfterFunc(time.Hour, func() { p.release(b) })
	b.overdue.Stop()
	defer b.end()
	idle := time.NewTimer(p.idleTimeout)
	idle.Stop()
	for p.next(b, idle) {
		if !p.run(b) {
			return // overdue, and the slot was taken meanwhile
		}
		// Let the callers just answered run first: those that call again
		// at once then join the next batch rather than wait a round trip
		// for the one after (measured: 14 calls per batch instead of 8
		// with 16 callers, up to twice the throughput). Not a linger: it waits
		// for no one.
		runtime.Gosched()
	}
}

// next moves the queue into b.calls, parking until there is work. It
// reports false when the sender must end: idle too long, or Pipe closed
// with nothing queued.
func (p *Pipe) next(b *batch, idle *time.Timer) bool {
	for {
		p.mu.Lock()
		if len(p.queue) > 0 {
			b.calls, p.queue = p.queue, b.calls
			p.mu.Unlock()
			return true
		}
		if p.closed {
			p.senders--
			p.mu.Unlock()
			return false
		}
		p.parked++
		p.mu.Unlock()
		if !p.park(idle) {
			return false
		}
	}
}

// park waits for a wake-up token, the idle timeout or Close. It reports
// false when the sender must end because it stayed idle.
func (p *Pipe) park(idle *time.Timer) bool {
	idle.Reset(p.idleTimeout)
	select {
	case <-p.wake:
		idle.Stop()
		return true
	case <-p.done:
	case <-idle.C:
	}
	idle.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.wake:
		// Work was promised to a parked sender just now. Tokens are sent
		// under mu, so none can be missed here; any parked sender may take
		// one, since each token stands for one parked count already spent.
		return true
	default:
	}
	p.parked--
	if p.closed {
		return true // next sees the closed Pipe and ends the sender
	}
	p.senders--
	return false
}

// run sends the calls of b still wanted in one pipeline and delivers every
// outcome. A call whose ctx has ended is not sent: its caller is gone or
// going, and a command it no longer waits for must not be written. It
// reports whether the sender keeps its slot (see release).
func (p *Pipe) run(b *batch) bool {
	kept := b.calls[:0]
	for _, c := range b.calls {
		if err := c.ctx.Err(); err != nil {
			p.skipped.Add(1)
			c.cmd.SetErr(notSent(err))
			p.deliver(c)
			continue
		}
		kept = append(kept, c)
		if c.pre != nil {
			b.cmds = append(b.cmds, c.pre)
		}
		b.cmds = append(b.cmds, c.cmd)
	}
	keep := true
	if len(kept) > 0 {
		p.batches.Add(1)
		p.sent.Add(uint64(len(kept)))
		p.inFlight.Add(1)
		// Errors are per command: a Redis error reply stays its command's,
		// a connection error is set on every command of the batch.
		latest := latestDeadline(kept)
		p.batchContext(b, latest)
		p.watch(b, latest)
		setup, err := p.exec(b)
		b.ctx.disarm()
		b.used = time.Now()
		p.mend(b, err, setup)
		keep = p.landed(b)
		p.inFlight.Add(-1)
		for _, c := range kept {
			p.deliver(c)
		}
	}
	clear(b.calls) // drop the pointers: delivered calls belong to others now
	clear(b.cmds)
	b.calls, b.cmds = b.calls[:0], b.cmds[:0]
	return keep
}

// exec writes b's commands and reads their replies: a lone command by
// Process where the Pipe may (WithLoneProcess), else as one pipeline. It
// returns the batch's error, and whether that error is the refused set-up
// of its connection (then on every command, as ErrSetup).
func (p *Pipe) exec(b *batch) (bool, error) {
	if len(b.cmds) == 1 && p.loneRdb != nil {
		return p.processLone(b, b.cmds[0].(*redis.Cmd))
	}
	_ = b.pl.BatchProcess(b.ctx, b.cmds...)
	_, err := b.pl.Exec(b.ctx)
	return unread(b.cmds, err), err
}

// batchContext arms b.ctx, the context of a batch whose calls' latest
// deadline is latest (zero if a call has none): never cancelled by a caller
// giving up, so that a batch is read to its end — its callers may have given up,
// but their late replies are still wanted — yet ending p.lateWindow after
// latest: go-redis checks it before dialing and between its retries, so a
// dead server cannot hold a batch for its dial retries, and a client with
// ContextTimeoutEnabled cuts the read of a written batch there too (and
// drops its connection). A client without it reads until its own
// ReadTimeout; the batch then goes overdue (see release) and stops holding
// up the calls behind it.
func (p *Pipe) batchContext(b *batch, latest time.Time) {
	if latest.IsZero() {
		b.ctx.arm(time.Time{})
		return
	}
	b.ctx.arm(latest.Add(p.lateWindow))
}

// unread sets on every command of a batch that was never read — neither
// a reply nor an error — err, the batch's error, as a setup error: go-redis
// leaves a Redis error from setting up the batch's connection (its
// handshake: AUTH, HELLO, SELECT) off the commands, as if it were one
// command's reply, and the caller would see an empty reply instead. It
// reports whether it found such commands.
func unread(cmds []redis.Cmder, err error) bool {
	if err == nil {
		return false
	}
	var setup error
	for _, c := range cmds {
		if cmd, ok := c.(*redis.Cmd); ok && cmd.Err() == nil && cmd.Val() == nil {
			if setup == nil {
				setup = &setupError{cause: err}
			}
			cmd.SetErr(setup)
		}
	}
	return setup != nil
}

// latestDeadline is the latest deadline of calls, or zero if one has none.
func latestDeadline(calls []*call) time.Time {
	var latest time.Time
	for _, c := range calls {
		d, ok := c.ctx.Deadline()
		if !ok {
			return time.Time{}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return latest
}

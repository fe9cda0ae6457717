package autopipe

import "time"

// DefaultMaxOverdue is how many overdue batches (see WithMaxOverdue) a Pipe
// lets run beside the ones holding its MaxInFlight slots.
const DefaultMaxOverdue = 8

// WithMaxOverdue sets how many overdue batches may run at once beside the
// MaxInFlight others (default DefaultMaxOverdue): a batch is overdue once
// the latest deadline of its calls has passed while it is still in flight —
// every caller has stopped waiting, and only the calls queued behind it
// still do. An overdue batch gives up its slot, so that the next batch goes
// out at once on another pooled connection instead of waiting for a reply
// that may never come (a blackholed master, whose swallowed request is never
// answered); it is still read to its end, and its late outcomes delivered.
// Each overdue batch holds a connection and a goroutine until the client
// gives up on it; with the cap reached, a batch that goes overdue keeps its
// slot. 0 turns the hand-over off: batches then never overtake one another
// (with MaxInFlight 1). It panics if n < 0.
func WithMaxOverdue(n int) Option {
	if n < 0 {
		panic("autopipe: WithMaxOverdue needs n >= 0")
	}
	return func(p *Pipe) { p.maxOverdue = n }
}

// WithOverdueAfter makes a batch overdue also once it has been in flight
// for d, though some of its callers still wait (default 0: never): calls
// with long deadlines — a background round willing to wait for a slow
// server — then hold up the calls queued behind them for d at most, not
// until their own deadline, while they are still read to their end. It
// panics if d < 0.
func WithOverdueAfter(d time.Duration) Option {
	if d < 0 {
		panic("autopipe: WithOverdueAfter needs d >= 0")
	}
	return func(p *Pipe) { p.overdueAfter = d }
}

// watch marks b in flight and arms its overdue timer for when it is due
// (see due; none if a call has no deadline), after freshening its
// connection.
func (p *Pipe) watch(b *batch, latest time.Time) {
	now := time.Now()
	p.freshen(b, now)
	p.mu.Lock()
	b.inFlight, b.latest, b.released = true, p.due(latest, now), false
	due := b.latest
	p.mu.Unlock()
	if !due.IsZero() {
		b.overdue.Reset(time.Until(due))
	}
}

// due is when a batch sent at sent, whose calls' latest deadline is latest
// (zero if a call has none), becomes overdue: at latest, or after the
// Pipe's overdueAfter if that is earlier.
func (p *Pipe) due(latest, sent time.Time) time.Time {
	if p.overdueAfter > 0 && (latest.IsZero() || sent.Add(p.overdueAfter).Before(latest)) {
		return sent.Add(p.overdueAfter)
	}
	return latest
}

// release is b's overdue timer. Once every caller of the batch in flight
// has passed its deadline (or the batch has been in flight overdueAfter),
// its sender gives up its slot: a call queued now,
// or already, starts a new sender on another connection. The check on the
// clock guards against a timer that fired for b's previous batch.
func (p *Pipe) release(b *batch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !b.inFlight || b.released || b.latest.IsZero() || time.Now().Before(b.latest) || p.overdue >= p.maxOverdue {
		return
	}
	b.released = true
	p.overdue++
	p.senders--
	p.overdueBatches.Add(1)
	if len(p.queue) > 0 && !p.closed {
		p.startLocked()
	}
}

// landed ends b's flight. It reports whether b's sender (still) holds a
// slot: an overdue one takes a free slot back, or must end.
func (p *Pipe) landed(b *batch) bool {
	b.overdue.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	b.inFlight = false
	if !b.released {
		return true
	}
	p.overdue--
	if p.senders < p.maxInFlight {
		p.senders++
		return true
	}
	return false
}

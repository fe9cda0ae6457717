package redlock

import (
	"math"
	"strings"
	"time"

	"github.com/seed818c56a1/quorumlock/clock"
)

// Defaults, used where no Option says otherwise.
const (
	// DefaultTTL is the lease each node grants. With auto-renew on it only
	// bounds how long a crashed holder blocks others.
	DefaultTTL = 10 * time.Second
	// DefaultNodeTimeout bounds every call to one node: an order of magnitude
	// above a LAN round trip, far below the TTL, so that a dead node costs
	// little and a slow one cannot eat the validity.
	DefaultNodeTimeout = 25 * time.Millisecond
	// DefaultDriftFactor is the share of the TTL allowed for clock drift
	// between the client and the nodes (plus clock.MinDrift).
	DefaultDriftFactor = 0.01
	// DefaultMaxWait bounds Lock and Do when their context has no deadline.
	DefaultMaxWait = 30 * time.Second
	// DefaultRetryMin and DefaultRetryMax bound the randomized exponential
	// backoff between acquisition attempts.
	DefaultRetryMin = 5 * time.Millisecond
	DefaultRetryMax = 200 * time.Millisecond
	// DefaultPrefix starts every key the library writes.
	DefaultPrefix = "quorumlock:"
	// DefaultFenceRetention is how long a key's fencing state is kept on a
	// node after the last grant or release that touched it.
	DefaultFenceRetention = 24 * time.Hour
	// MaxDuration bounds every duration option — TTL, node timeout, retry
	// delays, maximum wait, restart guard, fence retention: a longer one is
	// refused with ErrInvalid. Every lease and deadline the library derives
	// from them (the waiters' queue lease is 5·max retry delay + node
	// timeout; deadlines add them to the clock; the scripts count them in
	// milliseconds) then stays far from overflow.
	MaxDuration = 365 * 24 * time.Hour
)

// An Option configures a Client (as a default for all its locks, when given
// to New) or one acquisition (when given to Lock, TryLock or Do). Options are
// checked when used: a bad value makes that call fail with ErrInvalid — a
// duration above MaxDuration included.
// WithObserver and WithLogger given to one call add to the Client's
// observers, for that acquisition and its Lock; WithClock is an option of
// New only.
type Option func(*config)

// WithTTL sets the lease each node grants. The validity it leaves once an
// acquisition took a whole node timeout must still exceed the loss margin —
// ttl − drift > node timeout + max(node timeout, ttl/10) — or the lock could
// not be signalled lost in time; shorter TTLs are refused. Default
// DefaultTTL.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithNodeTimeout sets the timeout of every call to one node — acquire,
// extend and unlock alike — whatever the redis client's own settings.
// Default DefaultNodeTimeout.
func WithNodeTimeout(d time.Duration) Option { return func(c *config) { c.nodeTimeout = d } }

// WithDriftFactor sets the clock drift allowance as a share of the TTL, in
// [0, 1): drift = ttl·f + 2ms. Default DefaultDriftFactor.
func WithDriftFactor(f float64) Option { return func(c *config) { c.driftFactor = f } }

// WithAutoRenew turns the watchdog on or off. On (the default), a held lock
// is extended through the quorum every TTL/3 until Unlock or Close; if
// renewal cannot reach a majority before the validity runs out, the lock is
// lost and Done() closes first — a tenth of the TTL (at least one node
// timeout) before Until(). Off, the lock ends the same margin before its
// validity does. The watchdog's node calls may take up to four node timeouts
// (at most half the loss margin): they carry up to 100 locks each and are on
// no caller's path.
func WithAutoRenew(on bool) Option { return func(c *config) { c.autoRenew = on } }

// WithMaxWait bounds how long Lock and Do wait when their context has no
// deadline; the error then matches context.DeadlineExceeded and says that
// the maximum wait ran out. At most MaxDuration. Default DefaultMaxWait.
func WithMaxWait(d time.Duration) Option { return func(c *config) { c.maxWait = d } }

// WithRetryDelay sets the bounds of the randomized exponential backoff
// between acquisition attempts in Lock and Do: 0 < min ≤ max ≤ MaxDuration
// (a waiter's place in line is leased for 5·max + the node timeout).
// Default DefaultRetryMin and DefaultRetryMax.
func WithRetryDelay(min, max time.Duration) Option {
	return func(c *config) { c.retryMin, c.retryMax = min, max }
}

// WithPrefix sets the prefix of the keys the library writes: the lock is
// <prefix>{<key>} and its fencing counter <prefix>{<key>}:fence, one hash
// tag, so a node may be a Redis Cluster. Default DefaultPrefix.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithOwner makes acquisitions reentrant for owner: while owner holds a key,
// further acquisitions of it by the same owner are granted at once and nest;
// each is released by its own Unlock, and the key is freed when the last one
// is. Every acquisition with the same owner — from any goroutine or process —
// counts as the same holder, so owner must be unique to whatever should
// exclude others (e.g. a job ID). Each hold keeps its own TTL: on each node
// the key lives as long as the owner's longest live hold, so holds with
// different TTLs — per call, or from processes sharing the owner — never
// shorten each other's lease, in whatever order they are taken, renewed or
// released. Readers of an owner that already reads a key are granted at
// once, even while a writer waits (RLock). Without an owner (the default)
// every acquisition is its own owner and locks are not reentrant, as with
// sync.Mutex. An owner
// may not be empty, nor start with "r:", which marks readers (RLock) in the
// waiters' queues on the nodes.
func WithOwner(owner string) Option {
	return func(c *config) { c.owner, c.ownerSet = owner, true }
}

// WithRestartGuard sets how long after a node's server process starts its
// grants are not counted, overriding the default. A master that crashes and
// restarts at once without its data (no appendfsync always) may grant a key
// that a holder still holds on other nodes; not counting it until every
// lease it could have granted before has run out keeps such restarts safe.
// A Client that meets a node for the first time applies the same rule — it
// cannot tell a new master from one that restarted empty — so a master that
// just started is not counted for d unless TrustStart vouched for it. d
// must cover the longest TTL any client of these masters uses; 0 turns
// detection off (for masters with appendfsync always, where a restart keeps
// the keys).
//
// By default (no WithRestartGuard) the guard does not depend on who asks:
// a young node counts once it has been up for the longest TTL in use on the
// key, as the other nodes record it (at least the acquisition's own TTL);
// a node up for MaxRestartGuard counts at once; and when no such node (nor
// a vouched one) answers — masters that all just started — young nodes
// count after MaxRestartGuard. Leases with TTLs longer than
// MaxRestartGuard need WithRestartGuard at least that long on every client.
// See the package doc, "Restarts".
//
// Detection reads the node's LASTSAVE with every fresh grant — reset when a
// node starts, it costs next to nothing — and asks for run_id and uptime
// (INFO server) only when LASTSAVE changed since this Client last saw it:
// after a restart, or a save (LASTSAVE counts whole seconds, so a value is
// relied on only once seen two seconds after it). While a node is young,
// under the default guard, every reply also carries the keys' TTL record.
// A grant that cannot report its node's start — INFO refused to the user —
// is not counted (ErrStartUnknown).
func WithRestartGuard(d time.Duration) Option {
	return func(c *config) { c.guardWindow, c.guardSet = d, true }
}

// WithFenceRetention sets how long a key's fencing state is kept on a node
// after the last grant, renewal or release that touched it — never less,
// since none shortens it, so it lives as long as any hold of the key and d
// more; then it expires, so that locking many distinct keys leaves no state
// behind. A reader or nested hold that finds none takes the node's clock
// in microseconds instead (see the package doc). Tokens still grow after
// it expired: each node's token is the larger of its counter + 1 and its
// clock in microseconds, so a key locked again after its state expired on
// every node gets a larger token, as long as the masters' clocks did not
// step back, nor drift apart from each other, by as much as the time since
// its last holding (at least the retention). d must be longer than the TTL.
// Default DefaultFenceRetention.
func WithFenceRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithClock sets the clock used for validity and timers; tests pass a
// *clock.Fake. Given to New only: one clock paces all of a Client's
// renewals. Default clock.Real().
func WithClock(k clock.Clock) Option { return func(c *config) { c.clock = k } }

type config struct {
	ttl, nodeTimeout, maxWait time.Duration
	retryMin, retryMax        time.Duration
	driftFactor               float64
	autoRenew                 bool
	prefix                    string
	clock                     clock.Clock
	owner                     string
	ownerSet                  bool
	guardWindow               time.Duration
	guardSet                  bool
	retention                 time.Duration
	observers                 observers // the Client's, then one call's
	perCall                   bool      // set on a Client's stored config: options now apply to one call
}

func hasNil(os observers) bool {
	for _, o := range os {
		if o == nil {
			return true
		}
	}
	return false
}

func defaults() config {
	return config{
		ttl: DefaultTTL, nodeTimeout: DefaultNodeTimeout, maxWait: DefaultMaxWait,
		retryMin: DefaultRetryMin, retryMax: DefaultRetryMax,
		driftFactor: DefaultDriftFactor, autoRenew: true,
		prefix: DefaultPrefix, clock: clock.Real(), retention: DefaultFenceRetention,
	}
}

// with returns a copy of c with opts applied, or an error if the result is
// not a usable configuration. The clock is the Client's: a per-call option
// that changes it is refused. Observers added per call follow the Client's
// (WithObserver copies the slice: the Client's is never changed).
func (c config) with(opts []Option) (config, error) {
	clk := c.clock
	for _, o := range opts {
		if o == nil {
			return c, invalid("nil Option")
		}
		o(&c)
	}
	if c.perCall && c.clock != clk {
		return c, invalid("WithClock is an option of New, not of one call: one clock paces all of a Client's renewals")
	}
	return c, c.validate()
}

func (c *config) validate() error {
	if err := c.checkBounds(); err != nil {
		return err
	}
	switch {
	case c.ttl <= 0:
		return invalid("TTL %v must be positive", c.ttl)
	case c.nodeTimeout <= 0:
		return invalid("node timeout %v must be positive", c.nodeTimeout)
	case math.IsNaN(c.driftFactor) || c.driftFactor < 0 || c.driftFactor >= 1:
		return invalid("drift factor %v must be in [0, 1)", c.driftFactor)
	case c.ttl-c.drift() <= c.nodeTimeout+c.lossMargin():
		return invalid("TTL %v too short: the validity left after one node timeout (TTL − drift %v − node timeout %v) must exceed the loss margin %v",
			c.ttl, c.drift(), c.nodeTimeout, c.lossMargin())
	case c.retention <= c.ttl:
		return invalid("fence retention %v must be longer than the TTL %v", c.retention, c.ttl)
	case c.maxWait <= 0:
		return invalid("max wait %v must be positive", c.maxWait)
	case c.retryMin <= 0 || c.retryMax < c.retryMin:
		return invalid("retry delay [%v, %v] must satisfy 0 < min ≤ max", c.retryMin, c.retryMax)
	case c.clock == nil:
		return invalid("nil clock")
	case c.ownerSet && c.owner == "":
		return invalid("empty owner")
	case strings.HasPrefix(c.owner, readerMark):
		return invalid("owner %s starts with %q, which marks readers in the waiters' queues", shortKey(c.owner), readerMark)
	case hasNil(c.observers):
		return invalid("nil Observer or Logger")
	case c.guardSet && c.guardWindow < 0:
		return invalid("restart guard %v must not be negative", c.guardWindow)
	}
	return checkPrefix(c.prefix)
}

// checkBounds refuses a duration option above MaxDuration, naming it.
func (c *config) checkBounds() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"TTL", c.ttl}, {"node timeout", c.nodeTimeout}, {"max wait", c.maxWait},
		{"retry delay min", c.retryMin}, {"retry delay max", c.retryMax},
		{"restart guard", c.guardWindow}, {"fence retention", c.retention},
	} {
		if d.v > MaxDuration {
			return invalid("%s %v is longer than MaxDuration (%v): the leases and deadlines derived from it would overflow", d.name, d.v, MaxDuration)
		}
	}
	return nil
}

func (c *config) drift() time.Duration { return clock.Drift(c.ttl, c.driftFactor) }

// lossMargin is how long before the end of validity a lock that was not
// renewed is declared lost, so that Done() closes strictly before Until()
// with time to stop the work: a tenth of the TTL, at least one node timeout
// (the time one more renewal would take). The margin also absorbs a late
// timer: a loaded process fires timers tens of milliseconds late. validate
// refuses TTLs whose validity cannot hold it, and an acquisition that leaves
// less than it fails.
func (c *config) lossMargin() time.Duration { return max(c.nodeTimeout, c.ttl/10) }

// renewEvery is the watchdog's period: TTL/3, or sooner when the loss margin
// is a large part of the validity, so that a renewal and one retry come
// before the loss is declared. renewRetry is its pace after a failure.
func (c *config) renewEvery() time.Duration {
	return min(c.ttl/3, (c.ttl-c.drift()-c.lossMargin())/2)
}
func (c *config) renewRetry() time.Duration { return max(c.ttl/10, c.nodeTimeout) }

// renewTimeout bounds each node's call in a watchdog round: up to four node
// timeouts, at most half the loss margin, so that a retry still fits before
// the loss is declared. Validity is counted from the round's start, so a
// longer round costs validity, never safety.
func (c *config) renewTimeout() time.Duration {
	return max(c.nodeTimeout, min(4*c.nodeTimeout, c.lossMargin()/2))
}

// queueLease is how long a waiter keeps its place in line without a new
// attempt: several of the longest retry delays, so that only a waiter that
// gave up or crashed loses it.
func (c *config) queueLease() time.Duration { return 5*c.retryMax + c.nodeTimeout + time.Millisecond }

// restartGuard is the restart detection window: WithRestartGuard's, else the
// TTL — the least the default guard may be (guard.go). Zero means off.
func (c *config) restartGuard() time.Duration {
	if c.guardSet {
		return c.guardWindow
	}
	return c.ttl
}

// detectRestarts reports whether acquisitions check for restarted nodes.
func (c *config) detectRestarts() bool { return c.restartGuard() > 0 }

// defaultGuard reports whether acquisitions learn the guard from the nodes
// (guard.go): no WithRestartGuard.
func (c *config) defaultGuard() bool { return !c.guardSet }

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
	// MaxDuration bounds every duration option; a longer one is refused with
	// ErrInvalid, so that no lease or deadline derived from it can overflow.
	MaxDuration = 365 * 24 * time.Hour
)

// An Option configures a Client when given to New, or one acquisition when
// given to a call. A bad value makes that call fail with ErrInvalid (doc.go,
// "Options").
type Option func(*config)

// WithTTL sets the lease each node grants. TTLs too short to leave the loss
// margin are refused (doc.go, "Options"). Default DefaultTTL.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithNodeTimeout sets the timeout of every call to one node — acquire,
// extend and unlock alike — whatever the redis client's own settings.
// Default DefaultNodeTimeout.
func WithNodeTimeout(d time.Duration) Option { return func(c *config) { c.nodeTimeout = d } }

// WithDriftFactor sets the clock drift allowance as a share of the TTL, in
// [0, 1): drift = ttl·f + 2ms. Default DefaultDriftFactor.
func WithDriftFactor(f float64) Option { return func(c *config) { c.driftFactor = f } }

// WithAutoRenew turns the watchdog on or off: on (the default), a held lock
// is renewed every TTL/3 until Unlock or Close (doc.go, "Options").
func WithAutoRenew(on bool) Option { return func(c *config) { c.autoRenew = on } }

// WithMaxWait bounds how long Lock and Do wait when their context has no
// deadline. At most MaxDuration. Default DefaultMaxWait.
func WithMaxWait(d time.Duration) Option { return func(c *config) { c.maxWait = d } }

// WithRetryDelay sets the bounds of the randomized exponential backoff
// between attempts: 0 < min ≤ max ≤ MaxDuration. Default DefaultRetryMin
// and DefaultRetryMax.
func WithRetryDelay(min, max time.Duration) Option {
	return func(c *config) { c.retryMin, c.retryMax = min, max }
}

// WithPrefix sets the prefix of the names the library writes on the nodes
// (see Keys). Default DefaultPrefix.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithOwner makes acquisitions by owner reentrant: they nest, and the key
// is freed when the last is released. Owner must be unique to whatever should
// exclude others; see doc.go, "Options" and "Reentrancy".
func WithOwner(owner string) Option {
	return func(c *config) { c.owner, c.ownerSet = owner, true }
}

// WithRestartGuard sets how long after a node's process starts its grants
// are not counted, in place of the default guard; 0 turns restart detection
// off. See doc.go, "Restarts" and "Options".
func WithRestartGuard(d time.Duration) Option {
	return func(c *config) { c.guardWindow, c.guardSet = d, true }
}

// WithFenceRetention sets how long a key's fencing state outlives its last
// hold; it must be longer than the TTL (doc.go, "Fencing tokens").
// Default DefaultFenceRetention.
func WithFenceRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithClock sets the clock used for validity and timers; tests pass a
// *clock.Fake. An option of New only. Default clock.Real().
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

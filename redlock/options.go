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
func WithTTL(d time.Duration) Option { return func(cfg *config) { cfg.ttl = d } }

// WithNodeTimeout sets the timeout of every call to one node — acquire,
// extend and unlock alike — whatever the redis client's own settings.
// Default DefaultNodeTimeout.
func WithNodeTimeout(d time.Duration) Option { return func(cfg *config) { cfg.nodeTimeout = d } }

// WithDriftFactor sets the clock drift allowance as a share of the TTL, in
// [0, 1): drift = ttl·f + 2ms. Default DefaultDriftFactor.
func WithDriftFactor(f float64) Option { return func(cfg *config) { cfg.driftFactor = f } }

// WithAutoRenew turns the watchdog on or off: on (the default), a held lock
// is renewed every TTL/3 until Unlock or Close (doc.go, "Options").
func WithAutoRenew(on bool) Option { return func(cfg *config) { cfg.autoRenew = on } }

// WithMaxWait bounds how long Lock and Do wait when their context has no
// deadline. At most MaxDuration. Default DefaultMaxWait.
func WithMaxWait(d time.Duration) Option { return func(cfg *config) { cfg.maxWait = d } }

// WithRetryDelay sets the bounds of the randomized exponential backoff
// between attempts: 0 < min ≤ max ≤ MaxDuration. Default DefaultRetryMin
// and DefaultRetryMax.
func WithRetryDelay(min, max time.Duration) Option {
	return func(cfg *config) { cfg.retryMin, cfg.retryMax = min, max }
}

// WithPrefix sets the prefix of the names the library writes on the nodes
// (see Keys). Default DefaultPrefix.
func WithPrefix(p string) Option { return func(cfg *config) { cfg.prefix = p } }

// WithOwner makes acquisitions by owner reentrant: they nest, and the key
// is freed when the last is released. Owner must be unique to whatever should
// exclude others; see doc.go, "Options" and "Reentrancy".
func WithOwner(owner string) Option {
	return func(cfg *config) { cfg.owner, cfg.ownerSet = owner, true }
}

// WithRestartGuard sets how long after a node's process starts its grants
// are not counted, in place of the default guard; 0 turns restart detection
// off. See doc.go, "Restarts" and "Options".
func WithRestartGuard(d time.Duration) Option {
	return func(cfg *config) { cfg.guardWindow, cfg.guardSet = d, true }
}

// WithFenceRetention sets how long a key's fencing state outlives its last
// hold; it must be longer than the TTL (doc.go, "Fencing tokens").
// Default DefaultFenceRetention.
func WithFenceRetention(d time.Duration) Option { return func(cfg *config) { cfg.retention = d } }

// WithClock sets the clock used for validity and timers; tests pass a
// *clock.Fake. An option of New only. Default clock.Real().
func WithClock(k clock.Clock) Option { return func(cfg *config) { cfg.clock = k } }

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
	observers                 observers     // the Client's, then one call's
	clockSample               time.Duration // Check's clock-rate sample (check.go)
	perCall                   bool          // set on a Client's stored config: options now apply to one call
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
		clockSample: DefaultClockSample,
	}
}

// with returns a copy of cfg with opts applied, or an error if the result is
// not a usable configuration. The clock is the Client's: a per-call option
// that changes it is refused. Observers added per call follow the Client's
// (WithObserver copies the slice: the Client's is never changed).
func (cfg config) with(opts []Option) (config, error) {
	clk := cfg.clock
	for _, o := range opts {
		if o == nil {
			return cfg, invalid("nil Option")
		}
		o(&cfg)
	}
	if cfg.perCall && cfg.clock != clk {
		return cfg, invalid("WithClock is an option of New, not of one call: one clock paces all of a Client's renewals")
	}
	return cfg, cfg.validate()
}

func (cfg *config) validate() error {
	if err := cfg.checkBounds(); err != nil {
		return err
	}
	switch {
	case cfg.ttl <= 0:
		return invalid("TTL %v must be positive", cfg.ttl)
	case cfg.nodeTimeout <= 0:
		return invalid("node timeout %v must be positive", cfg.nodeTimeout)
	case math.IsNaN(cfg.driftFactor) || cfg.driftFactor < 0 || cfg.driftFactor >= 1:
		return invalid("drift factor %v must be in [0, 1)", cfg.driftFactor)
	case cfg.ttl-cfg.drift() <= cfg.nodeTimeout+cfg.lossMargin():
		return invalid("TTL %v too short: the validity left after one node timeout (TTL − drift %v − node timeout %v) must exceed the loss margin %v",
			cfg.ttl, cfg.drift(), cfg.nodeTimeout, cfg.lossMargin())
	case cfg.retention <= cfg.ttl:
		return invalid("fence retention %v must be longer than the TTL %v", cfg.retention, cfg.ttl)
	case cfg.maxWait <= 0:
		return invalid("max wait %v must be positive", cfg.maxWait)
	case cfg.retryMin <= 0 || cfg.retryMax < cfg.retryMin:
		return invalid("retry delay [%v, %v] must satisfy 0 < min ≤ max", cfg.retryMin, cfg.retryMax)
	case cfg.clock == nil:
		return invalid("nil clock")
	case cfg.ownerSet && cfg.owner == "":
		return invalid("empty owner")
	case strings.HasPrefix(cfg.owner, readerMark):
		return invalid("owner %s starts with %q, which marks readers in the waiters' queues", shortKey(cfg.owner), readerMark)
	case hasNil(cfg.observers):
		return invalid("nil Observer or Logger")
	case cfg.guardSet && cfg.guardWindow < 0:
		return invalid("restart guard %v must not be negative", cfg.guardWindow)
	}
	return checkPrefix(cfg.prefix)
}

// checkBounds refuses a duration option above MaxDuration, naming it.
func (cfg *config) checkBounds() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"TTL", cfg.ttl}, {"node timeout", cfg.nodeTimeout}, {"max wait", cfg.maxWait},
		{"retry delay min", cfg.retryMin}, {"retry delay max", cfg.retryMax},
		{"restart guard", cfg.guardWindow}, {"fence retention", cfg.retention},
	} {
		if d.v > MaxDuration {
			return invalid("%s %v is longer than MaxDuration (%v): the leases and deadlines derived from it would overflow", d.name, d.v, MaxDuration)
		}
	}
	return nil
}

func (cfg *config) drift() time.Duration { return clock.Drift(cfg.ttl, cfg.driftFactor) }

// lossMargin is how long before the end of validity a lock that was not
// renewed is declared lost, so that Done() closes strictly before Until()
// with time to stop the work: a tenth of the TTL, at least one node timeout
// (the time one more renewal would take). The margin also absorbs a late
// timer: a loaded process fires timers tens of milliseconds late. validate
// refuses TTLs whose validity cannot hold it, and an acquisition that leaves
// less than it fails.
func (cfg *config) lossMargin() time.Duration { return max(cfg.nodeTimeout, cfg.ttl/10) }

// renewEvery is the watchdog's period: TTL/3, or sooner when the loss margin
// is a large part of the validity, so that a renewal and one retry come
// before the loss is declared. renewRetry is its pace after a failure.
func (cfg *config) renewEvery() time.Duration {
	return min(cfg.ttl/3, (cfg.ttl-cfg.drift()-cfg.lossMargin())/2)
}
func (cfg *config) renewRetry() time.Duration { return max(cfg.ttl/10, cfg.nodeTimeout) }

// renewTimeout bounds each node's call in a watchdog round: up to four node
// timeouts, at most half the loss margin, so that a retry still fits before
// the loss is declared. Validity is counted from the round's start, so a
// longer round costs validity, never safety.
func (cfg *config) renewTimeout() time.Duration {
	return max(cfg.nodeTimeout, min(4*cfg.nodeTimeout, cfg.lossMargin()/2))
}

// queueLease is how long a waiter keeps its place in line without a new
// attempt: several of the longest retry delays, so that only a waiter that
// gave up or crashed loses it.
func (cfg *config) queueLease() time.Duration {
	return 5*cfg.retryMax + cfg.nodeTimeout + time.Millisecond
}

// restartGuard is the restart detection window: WithRestartGuard's, else the
// TTL — the least the default guard may be (guard.go). Zero means off.
func (cfg *config) restartGuard() time.Duration {
	if cfg.guardSet {
		return cfg.guardWindow
	}
	return cfg.ttl
}

// detectRestarts reports whether acquisitions check for restarted nodes.
func (cfg *config) detectRestarts() bool { return cfg.restartGuard() > 0 }

// defaultGuard reports whether acquisitions learn the guard from the nodes
// (guard.go): no WithRestartGuard.
func (cfg *config) defaultGuard() bool { return !cfg.guardSet }

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

// An Option configures a Client when given to New (the default of every
// lock), or one acquisition and its Lock when given to Lock, TryLock, Do and
// the other acquisitions (a per-call override). Options are checked when
// used: a nil Option or a bad value makes that call fail with ErrInvalid,
// nothing sent. WithClock is an option of New only: given to a call, it is
// refused with ErrInvalid.
type Option func(*config)

// WithTTL sets the lease each node grants. Default DefaultTTL. A TTL ≤ 0,
// above MaxDuration, or too short to leave the loss margin once an
// acquisition took a whole node timeout — ttl − drift must exceed node
// timeout + max(node timeout, ttl/10) — is refused with ErrInvalid, since
// the lock could not be signalled lost in time.
func WithTTL(d time.Duration) Option { return func(cfg *config) { cfg.ttl = d } }

// WithNodeTimeout sets the timeout of every call to one node — acquire,
// extend and unlock alike — whatever the redis client's own settings; a
// call's late outcome is awaited in the background for a late window more,
// min(4 × node timeout, 250 ms). It must be positive, at most MaxDuration
// and leave the TTL its loss margin (see WithTTL), else ErrInvalid.
// Default DefaultNodeTimeout.
func WithNodeTimeout(d time.Duration) Option { return func(cfg *config) { cfg.nodeTimeout = d } }

// WithDriftFactor sets the clock drift allowance as a share of the TTL:
// drift = ttl·f + 2ms, taken from every lock's validity. f outside [0, 1)
// (or NaN) is refused with ErrInvalid. Default DefaultDriftFactor.
func WithDriftFactor(f float64) Option { return func(cfg *config) { cfg.driftFactor = f } }

// WithAutoRenew turns the watchdog on or off. On (the default), a held lock
// is extended through the quorum every TTL/3 until Unlock or Close; if no
// majority renews it before its validity runs out, it is lost: Done closes
// and Err returns ErrLockLost a tenth of the TTL (at least one node timeout)
// before Until. Off, the lock ends that margin before its validity does,
// unless Extend moves it. The watchdog's node calls, on no caller's path,
// may take up to four node timeouts (at most half the loss margin) and
// carry up to 100 locks each, each tallied on its own.
func WithAutoRenew(on bool) Option { return func(cfg *config) { cfg.autoRenew = on } }

// WithMaxWait bounds how long a waiting call (Lock, Do, LockMany, RLock,
// Acquire, Campaign) waits when its context has no deadline; the error then
// matches context.DeadlineExceeded and says that the maximum wait ran out.
// It must be positive and at most MaxDuration, or the call fails with
// ErrInvalid. Default DefaultMaxWait.
func WithMaxWait(d time.Duration) Option { return func(cfg *config) { cfg.maxWait = d } }

// WithRetryDelay sets the bounds of the randomized exponential backoff
// between attempts: 0 < min ≤ max ≤ MaxDuration, else ErrInvalid. A
// backoff is cut short by a wake-up and by the holder's remaining lease.
// The bounds also lease a waiter's place in line, for 5·max + the node
// timeout: a waiter that stops asking loses its place then. Default
// DefaultRetryMin and DefaultRetryMax.
func WithRetryDelay(min, max time.Duration) Option {
	return func(cfg *config) { cfg.retryMin, cfg.retryMax = min, max }
}

// WithPrefix sets the prefix of the names the library writes on the nodes
// (see Keys). A prefix with a brace (the hash tag is the library's) or
// longer than MaxKeyLen is refused with ErrInvalid. Default DefaultPrefix.
func WithPrefix(p string) Option { return func(cfg *config) { cfg.prefix = p } }

// WithOwner makes every acquisition with the same owner — from any
// goroutine or process — count as the same holder, so owner must be unique
// to whatever should exclude others (e.g. a job ID). Its acquisitions of a
// key nest, each with its own hold, released by its own Unlock and keeping
// its own TTL; the key is freed when the last hold is released or runs
// out, and no hold's renewal or release shortens another's lease. Its
// readers nest too, even past a waiting writer; its reader and writer are
// not one holder (asking to write while reading waits for oneself, as
// with sync.RWMutex). Without an owner every acquisition is its own owner:
// locks are not reentrant. An empty owner, or one starting with "r:"
// (which marks readers in the waiters' queues), is refused with ErrInvalid.
func WithOwner(owner string) Option {
	return func(cfg *config) { cfg.owner, cfg.ownerSet = owner, true }
}

// WithRestartGuard sets how long after a node's server process starts its
// grants are not counted, the same for every node and key, in place of the
// default guard (which learns, from the TTLs the keys' holds record, the
// longest lease a restarted node may have lost, bounded by
// MaxRestartGuard). d must cover the longest TTL any client of these
// masters uses. 0 turns restart detection off: only for masters with
// appendfsync always, where a restart keeps the keys — otherwise a master
// restarted empty may grant a key a majority still holds. A negative d, or
// one above MaxDuration, is refused with ErrInvalid. With detection on, a
// grant whose node cannot report its start (INFO or LASTSAVE refused to the
// user) is not counted: ErrStartUnknown.
func WithRestartGuard(d time.Duration) Option {
	return func(cfg *config) { cfg.guardWindow, cfg.guardSet = d, true }
}

// WithFenceRetention sets how long a key's fencing state (its counters, a
// semaphore's limit record) outlives the last grant, renewal or release
// that touched it; then it expires, so that locking many distinct keys
// leaves nothing behind. No counter expires while any hold of its key
// lives. Tokens still grow after it expired, as long as the masters'
// clocks did not step back, nor drift apart from each other, by as much as
// the time since the key's last holding. It must be longer than the TTL
// and at most MaxDuration, else ErrInvalid. Default DefaultFenceRetention.
func WithFenceRetention(d time.Duration) Option { return func(cfg *config) { cfg.retention = d } }

// WithClock sets the clock used for validity and timers; tests pass a
// *clock.Fake. An option of New only — one clock paces all of a Client's
// renewals — refused with ErrInvalid when given to a call, and a nil clock
// is refused too. Default clock.Real().
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

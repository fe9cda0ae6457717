package clock

import "time"

// MinDrift is the fixed part of the clock drift allowance: it covers the
// millisecond granularity of Redis expiry times.
const MinDrift = 2 * time.Millisecond

// Drift is the allowance for clock drift between the client and the nodes
// over a lease of ttl: ttl·factor plus MinDrift.
func Drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + MinDrift
}

// Validity returns the end of a lease of ttl that was requested at start:
// start + ttl − Drift(ttl, factor). The lease was obtained only if a majority
// granted it before that instant; it is held until then and no longer.
//
// start must be a reading of the same Clock that will be compared against the
// result, so that the real clock's monotonic readings are used throughout.
func Validity(start time.Time, ttl time.Duration, factor float64) time.Time {
	return start.Add(ttl - Drift(ttl, factor))
}

// Remaining returns how much of a lease ending at until is left at now:
// ttl − elapsed − drift when until came from Validity. It is negative once the
// lease has ended.
func Remaining(now, until time.Time) time.Duration {
	return until.Sub(now)
}

package fence

import (
	"errors"
	"fmt"
)

// Errors of this package start with "fence:", naming the package that
// refused, as redlock's start with "redlock:"; fence does not import
// redlock, so that a store can check tokens from any issuer.
var (
	// ErrStale is matched by the error of a Set, SetTTL or Delete whose
	// token is smaller than one the key has already accepted: nothing was
	// written. errors.As gives the *StaleError with the token seen.
	ErrStale = errors.New("fence: stale token")

	// ErrInvalid is matched by the error of a call refused for bad input —
	// a nil ctx, an empty key, a negative token, a TTL under a millisecond,
	// no redis client: nothing was sent.
	ErrInvalid = errors.New("fence: invalid argument")
)

// A StaleError is a write refused because its key had already accepted a
// larger token. It matches ErrStale (errors.Is).
type StaleError struct {
	Key   string // the key of the refused write
	Token int64  // the refused write's token
	Seen  int64  // the largest token the key had accepted, larger than Token
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale token %d for key %q: token %d already accepted", e.Token, e.Key, e.Seen)
}

// Unwrap returns ErrStale.
func (e *StaleError) Unwrap() error { return ErrStale }

// invalid returns an error matching ErrInvalid that says what was wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

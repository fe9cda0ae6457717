package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed set.lua
	setSrc string
	//go:embed get.lua
	getSrc string

	setScript = redis.NewScript(setSrc)
	getScript = redis.NewScript(getSrc)
)

// A Redis keeps values on a Redis server — the resource a lock protects, not
// one of the lock's masters — together with the largest token each key has
// accepted, and writes only with a token at least that large. Every write
// is one script that checks the token and writes in one step, so no write
// can slip in between; tokens compare exactly over the whole int64 range.
//
// Equal tokens are accepted: a holder may write a key several times under
// one lock. A refused write changes nothing.
//
// Each key is two Redis keys in one hash tag (KeyNames), so a Redis Cluster
// serves both from one slot: the value, and the token, which is kept when
// the value is deleted or expires (a tombstone). Tokens are never expired
// nor removed by this package: a key forgetting its token would accept the
// late write that the token was there to refuse. A token costs one small
// string per key ever written; remove those of keys that no lock will ever
// issue a token for again with DEL, as any key.
//
// A Redis is safe for concurrent use and may be copied. It never closes the
// client it was given.
type Redis struct {
	c redis.UniversalClient
}

// NewRedis returns a store on the server (or Cluster) that c talks to. c is
// used as given: its timeouts and retries bound each call. A retried write
// is harmless: the same token is accepted again. With a nil c every call
// returns an error matching ErrInvalid.
func NewRedis(c redis.UniversalClient) *Redis { return &Redis{c: c} }

// KeyNames returns the Redis keys that hold key's value and its token:
// "{fence:<key>}" and "{fence:<key>}:token", whose hash tag is the same
// non-empty text for every key, so that both lie in one Cluster slot.
func KeyNames(key string) (value, token string) {
	value = "{fence:" + key + "}"
	return value, value + ":token"
}

// Set stores value under key if token is at least the largest token key has
// accepted, and makes token that largest; the value then has no expiry.
// Otherwise it writes nothing and returns a *StaleError (errors.Is ErrStale)
// with the token seen. Bad input (nil ctx, empty key, negative token)
// returns an error matching ErrInvalid, nothing sent.
func (r *Redis) Set(ctx context.Context, key, value string, token int64) error {
	return r.write(ctx, "Set", key, value, token, 0)
}

// SetTTL is Set with a value that expires after ttl (rounded up to a whole
// millisecond). The token outlives the value: once the value has expired, a
// write with a smaller token is still refused. ttl under a millisecond is
// refused (ErrInvalid).
func (r *Redis) SetTTL(ctx context.Context, key, value string, token int64, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return invalid("SetTTL %q: ttl %v is under a millisecond", key, ttl)
	}
	return r.write(ctx, "SetTTL", key, value, token, int64((ttl+time.Millisecond-1)/time.Millisecond))
}

// Delete removes key's value if token is at least the largest token key
// has accepted, and keeps token as that largest (a tombstone), so that a
// later Set with a smaller token is refused. It removes nothing, and
// returns a *StaleError, if token is smaller. Deleting a key with no value
// is not an error: the tombstone is written all the same.
func (r *Redis) Delete(ctx context.Context, key string, token int64) error {
	return r.write(ctx, "Delete", key, "", token, deleteValue)
}

// Get returns key's value and the largest token key has accepted. When key
// has no value (never set, deleted or expired) err is redis.Nil, and token
// is the largest accepted all the same (0 if none). Other failures are
// returned wrapped.
func (r *Redis) Get(ctx context.Context, key string) (value string, token int64, err error) {
	if err := r.check(ctx, "Get", key, 0); err != nil {
		return "", 0, err
	}
	vk, tk := KeyNames(key)
	reply, err := getScript.Run(ctx, r.c, []string{vk, tk}).Slice()
	if err != nil {
		return "", 0, fmt.Errorf("fence: Get %q: %w", key, err)
	}
	if len(reply) != 2 {
		return "", 0, fmt.Errorf("fence: Get %q: unexpected reply %v", key, reply)
	}
	if s, ok := reply[1].(string); ok {
		if token, err = parseToken(key, s); err != nil {
			return "", 0, err
		}
	}
	value, ok := reply[0].(string)
	if !ok {
		return "", token, redis.Nil
	}
	return value, token, nil
}

// deleteValue is the ttlMS of write that makes it a Delete.
const deleteValue = -1

// write runs set.lua: a Set when ttlMS ≥ 0 (0: no expiry), a Delete when
// ttlMS is deleteValue.
func (r *Redis) write(ctx context.Context, op, key, value string, token int64, ttlMS int64) error {
	if err := r.check(ctx, op, key, token); err != nil {
		return err
	}
	vk, tk := KeyNames(key)
	args := []any{strconv.FormatInt(token, 10), "set", value, ttlMS}
	if ttlMS == deleteValue {
		args[1], args[3] = "del", int64(0)
	}
	reply, err := setScript.Run(ctx, r.c, []string{vk, tk}, args...).Slice()
	if err != nil {
		return fmt.Errorf("fence: %s %q: %w", op, key, err)
	}
	var (
		done int64
		seen string
	)
	if len(reply) == 2 {
		done, _ = reply[0].(int64)
		seen, _ = reply[1].(string)
	}
	if seen == "" {
		return fmt.Errorf("fence: %s %q: unexpected reply %v", op, key, reply)
	}
	if done == 1 {
		return nil
	}
	stored, err := parseToken(key, seen)
	if err != nil {
		return err
	}
	return &StaleError{Key: key, Token: token, Seen: stored}
}

// check refuses bad input to a call, before anything is sent.
func (r *Redis) check(ctx context.Context, op, key string, token int64) error {
	switch {
	case ctx == nil:
		return invalid("%s: nil context", op)
	case r == nil || r.c == nil:
		return invalid("%s: no redis client (use NewRedis)", op)
	case key == "":
		return invalid("%s: empty key", op)
	case token < 0:
		return invalid("%s %q: negative token %d", op, key, token)
	}
	return nil
}

// parseToken reads a token stored for key.
func parseToken(key, s string) (int64, error) {
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil || t < 0 {
		return 0, errors.New("fence: key " + strconv.Quote(key) + " holds a token that is not one: " + strconv.Quote(s))
	}
	return t, nil
}

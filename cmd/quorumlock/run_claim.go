package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// A claim is what run asks the nodes for: the lock of one key (--key),
// the locks of several keys at once or none of them (--keys), a shared
// hold of one key (--read), or one of limit permits of a name (--limit).
type claim struct {
	keys  []string // one key, or several with --keys
	many  bool     // --keys: every key or none
	read  bool     // --read: a shared hold of keys[0]
	limit int      // --limit: > 0 for a permit of keys[0]

	elect bool   // elect: a leadership of keys[0] (Campaign), with value
	value string // elect --value
}

// String names the claim in run's messages.
func (c claim) String() string {
	switch {
	case c.many:
		quoted := make([]string, len(c.keys))
		for i, k := range c.keys {
			quoted[i] = strconv.Quote(k)
		}
		return "locks " + strings.Join(quoted, ", ")
	case c.read:
		return fmt.Sprintf("read lock %q", c.keys[0])
	case c.limit > 0:
		return fmt.Sprintf("a permit of %q (limit %d)", c.keys[0], c.limit)
	case c.elect:
		return fmt.Sprintf("leadership of %q", c.keys[0])
	}
	return fmt.Sprintf("lock %q", c.keys[0])
}

// try makes one attempt, and does not wait in line; a campaign always
// waits, until ctx ends.
func (c claim) try(ctx context.Context, client *redlock.Client) (*redlock.Lock, error) {
	switch {
	case c.elect:
		return client.Campaign(ctx, c.keys[0], c.value)
	case c.many:
		return client.TryLockMany(ctx, c.keys)
	case c.read:
		return client.TryRLock(ctx, c.keys[0])
	case c.limit > 0:
		return client.TryAcquire(ctx, c.keys[0], c.limit)
	}
	return client.TryLock(ctx, c.keys[0])
}

// wait waits in line until the claim is granted or ctx ends.
func (c claim) wait(ctx context.Context, client *redlock.Client) (*redlock.Lock, error) {
	switch {
	case c.elect:
		return client.Campaign(ctx, c.keys[0], c.value)
	case c.many:
		return client.LockMany(ctx, c.keys)
	case c.read:
		return client.RLock(ctx, c.keys[0])
	case c.limit > 0:
		return client.Acquire(ctx, c.keys[0], c.limit)
	}
	return client.Lock(ctx, c.keys[0])
}

// Environment variables set for CMD.
const (
	envKey    = "QUORUMLOCK_KEY"    // the key, the keys joined by commas (--keys), or the name (--limit)
	envToken  = "QUORUMLOCK_TOKEN"  // the fencing token; with --keys the largest of the keys'
	envTokens = "QUORUMLOCK_TOKENS" // --keys only: key=token for every key, comma-separated, in the order given
	envPermit = "QUORUMLOCK_PERMIT" // --limit only: the permit held, in [0, limit)
	envTerm   = "QUORUMLOCK_TERM"   // elect only: the leader's term (its token)
)

// env returns the variables that tell CMD about l, which holds c.
func (c claim) env(l *redlock.Lock) []string {
	env := []string{envKey + "=" + l.Key(), envToken + "=" + strconv.FormatInt(l.Token(), 10)}
	if c.many {
		tokens := make([]string, len(c.keys))
		for i, k := range c.keys {
			tokens[i] = k + "=" + strconv.FormatInt(l.TokenOf(k), 10)
		}
		env = append(env, envTokens+"="+strings.Join(tokens, ","))
	}
	if c.limit > 0 {
		env = append(env, envPermit+"="+strconv.Itoa(l.Permit()))
	}
	if c.elect {
		env = append(env, envTerm+"="+strconv.FormatInt(l.Token(), 10))
	}
	return env
}

// childEnv returns base without the variables run sets, followed by set: a
// run nested in CMD must not pass its parent's per-key tokens or permit on
// as its own.
func childEnv(base, set []string) []string {
	out := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case envKey, envToken, envTokens, envPermit, envTerm:
			continue
		}
		out = append(out, kv)
	}
	return append(out, set...)
}

// parseKeys splits --keys, refusing an empty or repeated key (a key cannot
// contain a comma there).
func parseKeys(list string) ([]string, error) {
	keys := strings.Split(list, ",")
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		k = strings.TrimSpace(k)
		switch {
		case k == "":
			return nil, fmt.Errorf("--keys %q: empty key", list)
		case seen[k]:
			return nil, fmt.Errorf("--keys %q: key %q given twice", list, k)
		}
		keys[i], seen[k] = k, true
	}
	return keys, nil
}

// checkClaim returns what --key, --keys, --read and --limit ask for, or
// why they do not go together; given holds the flags set on the command line.
func checkClaim(key, keys string, read bool, limit int, given map[string]bool) (claim, error) {
	many := given["keys"]
	switch {
	case key != "" && many:
		return claim{}, errors.New("--key and --keys exclude each other: give one")
	case key == "" && !many:
		return claim{}, errors.New("--key or --keys is required")
	case read && given["limit"]:
		return claim{}, errors.New("--read and --limit exclude each other: a shared hold or a permit")
	case many && read:
		return claim{}, errors.New("--read holds one key: give --key, not --keys")
	case many && given["limit"]:
		return claim{}, errors.New("--limit counts the holders of one name: give --key, not --keys")
	case given["limit"] && (limit < 1 || limit > redlock.MaxLimit):
		return claim{}, fmt.Errorf("--limit %d must be in [1, %d]", limit, redlock.MaxLimit)
	case !many:
		return claim{keys: []string{key}, read: read, limit: limit}, nil
	}
	list, err := parseKeys(keys)
	return claim{keys: list, many: true}, err
}

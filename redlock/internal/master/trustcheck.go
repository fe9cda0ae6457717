package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

// ErrInUse is matched by CheckNew's errors for a node in use (redlock.ErrInUse).
var ErrInUse = errors.New("redlock: masters in use; a vouch could re-admit a master that lost leases")

// NewSpread is how far apart the starts of a new deployment's masters may
// be (redlock.NewSpread).
const NewSpread = 10 * time.Second

// An InUseError says why vouching for one node is unsafe; CheckNew's
// wrapper returns it as a redlock.InUseError, whose comment states it.
type InUseError struct {
	Other int    // index in CheckNew's nodes of the node in use
	Why   string // e.g. "holds 2 live locks under \"quorumlock:\" (quorumlock:{k})"
}

func (e *InUseError) Error() string   { return fmt.Sprintf("redlock: node %d %s", e.Other, e.Why) }
func (e *InUseError) Unwrap() error   { return ErrInUse }
func (e *InUseError) Is(t error) bool { return t == ErrInUse }

// holdsRecheck is how long CheckNew waits before it looks again at the
// locks it found: a failed attempt's undo, still on its way, is gone by
// then; a lock that is held is not.
const holdsRecheck = 300 * time.Millisecond

// CheckNew reports, for each of nodes, whether vouching for it with
// TrustStart is safe (redlock.CheckNew states the contract).
func CheckNew(ctx context.Context, nodes []redis.UniversalClient, prefix string) []error {
	ss := make([]survey, len(nodes))
	forEach(len(nodes), func(i int) { ss[i] = surveyNode(ctx, nodes[i], prefix) })
	if anyHolds(ss) {
		// A failed attempt's undo may still be on its way: look again.
		time.Sleep(holdsRecheck)
		forEach(len(nodes), func(i int) {
			if ss[i].err == nil && len(ss[i].holds) > 0 {
				ss[i].holds = stillHeld(ctx, nodes[i], ss[i].holds)
			}
		})
	}
	errs := make([]error, len(nodes))
	for i := range ss {
		errs[i] = checkOne(ss, i, prefix)
	}
	return errs
}

// A survey is what CheckNew read of one node.
type survey struct {
	err     error
	runID   string
	uptime  time.Duration // of its youngest server (a cluster's primaries)
	oldest  time.Duration // of its oldest server
	role    string
	vouched bool
	holds   []string // live locks, readers and permits under the prefix
}

// surveyNode surveys one node: on a *redis.ClusterClient, every primary
// of the cluster, as one node whose youngest primary is its age, vouched
// only if every primary is.
func surveyNode(ctx context.Context, rdb redis.UniversalClient, prefix string) survey {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return surveyServer(ctx, rdb, prefix)
	}
	var mu sync.Mutex
	var all []survey
	err := cc.ForEachMaster(ctx, func(ctx context.Context, p *redis.Client) error {
		s := surveyServer(ctx, p, prefix)
		mu.Lock()
		defer mu.Unlock()
		all = append(all, s)
		return s.err
	})
	if err != nil || len(all) == 0 {
		return survey{err: cmp.Or(err, errors.New("redlock: CheckNew: the cluster has no primary"))}
	}
	s := all[0]
	for _, o := range all[1:] {
		s.uptime, s.oldest = min(s.uptime, o.uptime), max(s.oldest, o.oldest)
		s.vouched = s.vouched && o.vouched
		s.holds = append(s.holds, o.holds...)
		if o.role != "master" {
			s.role = o.role
		}
	}
	return s
}

// surveyServer surveys the one server rdb talks to.
func surveyServer(ctx context.Context, rdb redis.UniversalClient, prefix string) survey {
	var s survey
	info, err := rdb.InfoMap(ctx, "server", "replication").Result()
	if err != nil {
		s.err = fmt.Errorf("redlock: CheckNew: INFO: %w", err)
		return s
	}
	s.runID, s.role = info["Server"]["run_id"], info["Replication"]["role"]
	up, _ := strconv.Atoi(info["Server"]["uptime_in_seconds"])
	s.uptime = time.Duration(up) * time.Second
	s.oldest = s.uptime
	if s.vouched, s.err = VouchedRecord(ctx, rdb, info["Server"]); s.err != nil {
		s.err = fmt.Errorf("redlock: CheckNew: %w", s.err)
		return s
	}
	s.holds, s.err = scanHolds(ctx, rdb, prefix)
	return s
}

// VouchedRecord reports whether TrustStart vouched for the server process
// rdb talks to, whose INFO server section is srv: its record holds srv's
// run_id.
func VouchedRecord(ctx context.Context, rdb redis.UniversalClient, srv map[string]string) (bool, error) {
	key := TrustKey
	if srv["redis_mode"] == "cluster" {
		// TrustStart writes every slot's record of a primary at once: one
		// stands for all.
		_, slots, err := servedSlots(ctx, rdb)
		if err != nil {
			return false, err
		}
		if len(slots) > 0 {
			key = trustKeyOf(slots[0])
		}
	}
	vouched, err := rdb.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("GET %s: %w", key, err)
	}
	return vouched != "" && vouched == srv["run_id"], nil
}

// scanHolds returns the keys under prefix that are held: locks and permits
// (hashes with an owner) and readers (":readers" sets). Fencing counters,
// waiters' lines and records may outlive every hold and are not counted.
func scanHolds(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]string, error) {
	var holds []string
	match := escapeGlob(prefix) + "*"
	locks := rdb.ScanType(ctx, 0, match, 1000, "hash").Iterator()
	for locks.Next(ctx) {
		if holder, err := rdb.HGet(ctx, locks.Val(), "owner").Result(); err == nil && holder != "" {
			holds = append(holds, locks.Val())
		}
	}
	readers := rdb.ScanType(ctx, 0, match+":readers", 1000, "zset").Iterator()
	for readers.Next(ctx) {
		holds = append(holds, readers.Val())
	}
	if err := errors.Join(locks.Err(), readers.Err()); err != nil {
		return nil, fmt.Errorf("redlock: CheckNew: SCAN: %w", err)
	}
	return holds, nil
}

// stillHeld returns those of keys that are still held.
func stillHeld(ctx context.Context, rdb redis.UniversalClient, keys []string) []string {
	var out []string
	for _, k := range keys {
		if n, err := rdb.Exists(ctx, k).Result(); err != nil || n > 0 {
			out = append(out, k)
		}
	}
	return out
}

// checkOne is CheckNew's verdict on node i.
func checkOne(ss []survey, i int, prefix string) error {
	s := ss[i]
	switch {
	case s.err != nil:
		return s.err
	case s.role != "" && s.role != "master":
		return fmt.Errorf("%w: INFO replication says role:%s; vouch for masters only", ErrReplica, s.role)
	case s.vouched:
		return nil
	}
	for j, o := range ss {
		if o.err == nil && len(o.holds) > 0 {
			return &InUseError{Other: j, Why: fmt.Sprintf("holds %d live lock(s) under %q (%s)", len(o.holds), prefix, ShortKey(o.holds[0]))}
		}
	}
	for j, o := range ss {
		if o.err == nil && o.oldest > s.uptime+NewSpread {
			return &InUseError{Other: j, Why: fmt.Sprintf("has been up %v, this node only %v: it may have restarted while the masters were in use", o.oldest, s.uptime)}
		}
	}
	return nil
}

func anyHolds(ss []survey) bool {
	for _, s := range ss {
		if s.err == nil && len(s.holds) > 0 {
			return true
		}
	}
	return false
}

func forEach(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// escapeGlob escapes the glob characters of s for SCAN MATCH.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// shortKeyLen bounds how much of a key an error message quotes.
const shortKeyLen = 64

// ShortKey quotes key for an error message, cut to shortKeyLen bytes (on a
// rune boundary) with its full length when longer.
func ShortKey(key string) string {
	if len(key) <= shortKeyLen {
		return strconv.Quote(key)
	}
	cut := shortKeyLen
	for cut > 0 && !utf8.RuneStart(key[cut]) {
		cut--
	}
	return strconv.Quote(key[:cut]) + "…(" + strconv.Itoa(len(key)) + " bytes)"
}

// TrustKeyFor returns the vouch record that covers key on a Redis Cluster
// node (redlock.TrustKeyFor).
func TrustKeyFor(key string) string { return trustKeyOf(SlotOf(key)) }

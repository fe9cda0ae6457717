package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A release ends one holding.
type release func(context.Context) error

// A subject is one lock implementation under test, seen through the two
// calls the cases need.
type subject struct {
	name string
	// try makes one attempt to acquire key.
	try func(ctx context.Context, key string) (release, error)
	// wait blocks until key is acquired, with the library's own retry
	// policy; nil where waiting does not apply (the floor).
	wait func(ctx context.Context, key string) (release, error)
}

// Subject names, as printed in the table.
const (
	nameFloor     = "floor"
	nameQLNoRenew = "quorumlock (renew off)"
	nameQL        = "quorumlock (default)"
	nameRedsync   = "redsync v4 (defaults)"
	nameRedislock = "redislock (1 node)"
)

// floorTTL is the lease of the floor's keys (quorumlock's default TTL);
// redislockTTL is redsync's default expiry.
const (
	floorTTL     = 10 * time.Second
	redislockTTL = 8 * time.Second
)

var errFloorTaken = errors.New("bench: floor: SET NX refused on a fresh key")

// floor is the least any Redlock can do per cycle: SET NX PX to every node
// in parallel and wait for all, then DEL on every node in parallel and wait
// for all. No script, no value check, no quorum logic.
type floor struct{ nodes []redis.UniversalClient }

func (f floor) fanout(op func(redis.UniversalClient) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.nodes))
	for i, n := range f.nodes {
		wg.Go(func() { errs[i] = op(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (f floor) lock(ctx context.Context, key string) error {
	return f.fanout(func(n redis.UniversalClient) error {
		ok, err := n.SetNX(ctx, key, "1", floorTTL).Result()
		if err == nil && !ok {
			err = errFloorTaken
		}
		return err
	})
}

func (f floor) unlock(ctx context.Context, key string) error {
	return f.fanout(func(n redis.UniversalClient) error { return n.Del(ctx, key).Err() })
}

func floorSubject(nodes []redis.UniversalClient) subject {
	f := floor{nodes}
	return subject{name: nameFloor, try: func(ctx context.Context, key string) (release, error) {
		if err := f.lock(ctx, key); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return f.unlock(ctx, key) }, nil
	}}
}

// newQuorumlock returns a quorumlock Client over nodes, closed in cleanup.
func newQuorumlock(t testing.TB, nodes []redis.UniversalClient, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatalf("bench: redlock.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func quorumlockSubject(t testing.TB, name string, nodes []redis.UniversalClient, opts ...redlock.Option) subject {
	c := newQuorumlock(t, nodes, opts...)
	held := func(l *redlock.Lock, err error) (release, error) {
		if err != nil {
			return nil, err
		}
		return l.Unlock, nil
	}
	return subject{
		name: name,
		try:  func(ctx context.Context, key string) (release, error) { return held(c.TryLock(ctx, key)) },
		wait: func(ctx context.Context, key string) (release, error) { return held(c.Lock(ctx, key)) },
	}
}

// newRedsync returns redsync over one go-redis pool per node.
func newRedsync(nodes []redis.UniversalClient) *redsync.Redsync {
	pools := make([]rsredis.Pool, len(nodes))
	for i, n := range nodes {
		pools[i] = goredis.NewPool(n)
	}
	return redsync.New(pools...)
}

func redsyncSubject(nodes []redis.UniversalClient) subject {
	rs := newRedsync(nodes)
	held := func(m *redsync.Mutex, err error) (release, error) {
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			ok, err := m.UnlockContext(ctx)
			if err == nil && !ok {
				err = fmt.Errorf("bench: redsync: unlock of %s reached no quorum", m.Name())
			}
			return err
		}, nil
	}
	return subject{
		name: nameRedsync,
		try: func(ctx context.Context, key string) (release, error) {
			m := rs.NewMutex(key)
			return held(m, m.TryLockContext(ctx))
		},
		// LockContext with redsync's defaults: 32 tries, 50–250 ms apart.
		wait: func(ctx context.Context, key string) (release, error) {
			m := rs.NewMutex(key)
			return held(m, m.LockContext(ctx))
		},
	}
}

// redislockSubject uses one node only: a single-master reference for scale.
// redislock's default is not to retry; for waiting it gets its own
// ExponentialBackoff with the minimum its documentation recommends (16 ms)
// and a cap near the other libraries' (256 ms).
func redislockSubject(node redis.UniversalClient) subject {
	c := redislock.New(node)
	obtain := func(ctx context.Context, key string, opt *redislock.Options) (release, error) {
		l, err := c.Obtain(ctx, key, redislockTTL, opt)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
	return subject{
		name: nameRedislock,
		try:  func(ctx context.Context, key string) (release, error) { return obtain(ctx, key, nil) },
		wait: func(ctx context.Context, key string) (release, error) {
			retry := redislock.ExponentialBackoff(16*time.Millisecond, 256*time.Millisecond)
			return obtain(ctx, key, &redislock.Options{RetryStrategy: retry})
		},
	}
}

package main

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A store keeps the demo's stock counter and sales on one Redis server. A
// purchase reads the stock, then writes it back decremented: without a lock
// around it, two buyers read the same stock and the shop oversells.
type store struct {
	rdb         *redis.Client
	stock, sold string // keys
}

func newStore(rdb *redis.Client, prefix, key string) *store {
	base := prefix + "demo:{" + key + "}:"
	return &store{rdb: rdb, stock: base + "stock", sold: base + "sold"}
}

// reset puts stock items on sale and forgets earlier sales.
func (s *store) reset(ctx context.Context, stock int) error {
	return s.rdb.MSet(ctx, s.stock, stock, s.sold, 0).Err()
}

// buy sells one item if any is left, and returns the stock it left, or -1
// if it sold nothing. The pause between reading and writing the stock
// stands for the work of a real purchase (payment, invoice); it widens the
// window a broken lock leaves.
func (s *store) buy(ctx context.Context, pause time.Duration) (int64, error) {
	left, err := s.rdb.Get(ctx, s.stock).Int64()
	if err != nil || left <= 0 {
		return -1, err
	}
	if err := sleepCtx(ctx, pause); err != nil {
		return -1, err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.stock, left-1, 0)
		p.Incr(ctx, s.sold)
		return nil
	})
	if err != nil {
		return -1, err
	}
	return left - 1, nil
}

// counts returns the stock left and the items sold, as the store has them.
func (s *store) counts(ctx context.Context) (left, sold int64, err error) {
	vals, err := s.rdb.MGet(ctx, s.stock, s.sold).Result()
	if err != nil {
		return 0, 0, err
	}
	var n [2]int64
	for i, v := range vals {
		str, _ := v.(string)
		if n[i], err = redis.NewStringResult(str, nil).Int64(); err != nil {
			return 0, 0, err
		}
	}
	return n[0], n[1], nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// A checker watches mutual exclusion from inside this process: every holder
// enters before its critical section and leaves after it.
type checker struct {
	holders  atomic.Int64
	overlaps atomic.Int64 // entries that found another holder inside
}

func (c *checker) enter() (leave func()) {
	if c.holders.Add(1) > 1 {
		c.overlaps.Add(1)
	}
	return func() { c.holders.Add(-1) }
}

// A buyerStats counts what the workers did; it is safe for concurrent use.
type buyerStats struct {
	sold, soldOut, lost, notObtained, failed atomic.Int64

	mu    sync.Mutex
	waits []time.Duration // time from asking for the lock to holding it
}

func (t *buyerStats) waited(d time.Duration) {
	t.mu.Lock()
	t.waits = append(t.waits, d)
	t.mu.Unlock()
}

// percentiles returns the p-th percentiles (0–100) of the waits, nearest rank.
func (t *buyerStats) percentiles(ps ...float64) []time.Duration {
	t.mu.Lock()
	w := slices.Clone(t.waits)
	t.mu.Unlock()
	slices.Sort(w)
	out := make([]time.Duration, len(ps))
	for i, p := range ps {
		if len(w) > 0 {
			out[i] = w[min(len(w)-1, int(p/100*float64(len(w))))]
		}
	}
	return out
}

// record counts the outcome of one purchase attempt. It reports false when
// the worker should stop: its context ended.
func (t *buyerStats) record(ctx context.Context, bought bool, err error) bool {
	if bought {
		t.sold.Add(1)
	}
	switch {
	case errors.Is(err, redlock.ErrLockLost):
		t.lost.Add(1)
	case ctx.Err() != nil:
		return false
	case err == nil && !bought:
		t.soldOut.Add(1)
	case errors.Is(err, redlock.ErrNotObtained):
		t.notObtained.Add(1)
	case err != nil:
		t.failed.Add(1)
	}
	return true
}

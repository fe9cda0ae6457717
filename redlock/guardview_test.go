package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

func TestViewRestartGuard(t *testing.T) {
	up := func(d time.Duration) redlock.MasterStart { return redlock.MasterStart{Known: true, Uptime: d} }
	vouched := redlock.MasterStart{Known: true, Uptime: time.Second, Vouched: true}
	const ttl = 10 * time.Second
	cases := []struct {
		name    string
		masters []redlock.MasterStart
		longest time.Duration
		opts    []redlock.Option
		guard   time.Duration
		counted int
		wait    time.Duration
	}{
		// No master is old: the guard is MaxRestartGuard for every one,
		// however short the TTL (the first outside review: status said 10s).
		{"fresh masters, up 12s", []redlock.MasterStart{up(12 * time.Second), up(12 * time.Second), up(12 * time.Second)},
			0, nil, time.Minute, 0, 49 * time.Second},
		{"one vouched for", []redlock.MasterStart{vouched, up(12 * time.Second), up(5 * time.Second)},
			0, nil, ttl, 2, 0},
		{"one old, a longer TTL in use", []redlock.MasterStart{up(2 * time.Minute), up(12 * time.Second), up(12 * time.Second)},
			30 * time.Second, nil, 30 * time.Second, 1, 19 * time.Second},
		// Once the oldest is old (in 29s), the guard falls to the TTL.
		{"young masters age", []redlock.MasterStart{up(32 * time.Second), up(12 * time.Second), up(2 * time.Second)},
			0, nil, time.Minute, 0, 29 * time.Second},
		{"explicit guard", []redlock.MasterStart{up(12 * time.Second), up(2 * time.Second), {}},
			0, []redlock.Option{redlock.WithRestartGuard(5 * time.Second)}, 5 * time.Second, 1, 4 * time.Second},
		{"too few known", []redlock.MasterStart{up(2 * time.Minute), {}, {}},
			0, nil, ttl, 1, -1},
		{"detection off", []redlock.MasterStart{up(0), up(0), {}},
			0, []redlock.Option{redlock.WithRestartGuard(0)}, 0, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := redlock.ViewRestartGuard(tc.masters, tc.longest, append([]redlock.Option{redlock.WithTTL(ttl)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			// Left is read against the clock: allow a few ms.
			if v.Guard != tc.guard || v.Counted != tc.counted || (v.Wait-tc.wait).Abs() > 50*time.Millisecond || v.Need != 2 {
				t.Errorf("got guard %v, %d counted, wait %v, need %d; want %v, %d, %v, 2", v.Guard, v.Counted, v.Wait, v.Need, tc.guard, tc.counted, tc.wait)
			}
			unknown := 0
			for _, m := range tc.masters {
				if !m.Known {
					unknown++
				}
			}
			if v.Unknown != unknown || len(v.Left) != len(tc.masters) {
				t.Errorf("unknown %d, %d left; want %d, %d", v.Unknown, len(v.Left), unknown, len(tc.masters))
			}
		})
	}
	if _, err := redlock.ViewRestartGuard(nil, 0); !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("no masters: %v, want ErrInvalid", err)
	}
}

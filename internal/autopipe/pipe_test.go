package autopipe_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// TestConcurrentCallsGetTheirOwnReplies runs many goroutines through one
// Pipe: every reply must be its own call's.
func TestConcurrentCallsGetTheirOwnReplies(t *testing.T) {
	for _, inFlight := range []int{1, 3} {
		t.Run(fmt.Sprintf("inflight=%d", inFlight), func(t *testing.T) {
			lab := redislab.Start(t, 1)
			p := newPipe(t, lab.Clients(t)[0], autopipe.WithMaxInFlight(inFlight))
			const workers, each = 32, 40
			ctx := testkit.Context(t, 20*time.Second)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					key := fmt.Sprintf("count:%d", w)
					for i := range each {
						if n, err := p.Do(ctx, "incr", key).Int64(); err != nil || n != int64(i+1) {
							t.Errorf("worker %d: INCR = %d, %v; want %d", w, n, err, i+1)
							return
						}
						want := fmt.Sprintf("%d/%d", w, i)
						if got, err := p.Do(ctx, "eval", "return ARGV[1]", 0, want).Text(); err != nil || got != want {
							t.Errorf("worker %d: EVAL = %q, %v; want %q", w, got, err, want)
							return
						}
					}
				})
			}
			wg.Wait()
			s := p.Stats()
			if want := uint64(workers * each * 2); s.Calls != want || s.Sent != want || s.Skipped != 0 || s.Late != 0 {
				t.Errorf("stats = %+v, want %d calls, all sent, none skipped or late", s, want)
			}
			t.Logf("%d calls in %d batches", s.Sent, s.Batches)
		})
	}
}

// TestBatchesFormWhileOneIsInFlight slows the link by a few milliseconds:
// the calls of concurrent callers must share round trips, and the server
// must still see every command.
func TestBatchesFormWhileOneIsInFlight(t *testing.T) {
	fp, rdb, direct := proxied(t, nil)
	p := newPipe(t, rdb)
	ctx := testkit.Context(t, 20*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil { // dial outside the count
		t.Fatalf("PING: %v", err)
	}
	fp.SetLatency(2*time.Millisecond, 2*time.Millisecond)
	before := commandsProcessed(t, direct)
	warm := p.Stats()
	const workers, each = 16, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				if err := p.Do(ctx, "incr", fmt.Sprintf("batch:%d", w)).Err(); err != nil {
					t.Errorf("INCR: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	processed := commandsProcessed(t, direct) - before - 1 // less the first INFO
	s := p.Stats()
	calls, batches := s.Sent-warm.Sent, s.Batches-warm.Batches
	t.Logf("%d calls, %d batches, server processed %d commands", calls, batches, processed)
	if calls != workers*each || processed < calls {
		t.Errorf("sent %d commands and the server processed %d, want %d each", calls, processed, workers*each)
	}
	if batches*4 > calls {
		t.Errorf("%d calls went out in %d batches, want at most a quarter as many batches", calls, batches)
	}
}

// commandsProcessed returns the server's INFO stats total_commands_processed.
func commandsProcessed(t *testing.T, rdb *redis.Client) uint64 {
	t.Helper()
	info, err := rdb.Info(testkit.Context(t, 5*time.Second), "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatalf("total_commands_processed %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("no total_commands_processed in INFO stats")
	return 0
}

// TestLoneCallerGoesOutAtOnce: a caller alone never waits for company; each
// of its calls is a batch of its own.
func TestLoneCallerGoesOutAtOnce(t *testing.T) {
	lab := redislab.Start(t, 1)
	p := newPipe(t, lab.Clients(t)[0])
	ctx := testkit.Context(t, 10*time.Second)
	const calls = 50
	for i := range calls {
		if n, err := p.Do(ctx, "incr", "lone").Int64(); err != nil || n != int64(i+1) {
			t.Fatalf("INCR = %d, %v; want %d", n, err, i+1)
		}
	}
	if s := p.Stats(); s.Batches != calls || s.Sent != calls {
		t.Errorf("stats = %+v, want %d batches of one", s, calls)
	}
}

// TestErrorReplyStaysWithItsCommand queues error replies at the head, in the
// middle and at the tail of one batch: each is its own command's error only,
// and no command runs twice.
func TestErrorReplyStaysWithItsCommand(t *testing.T) {
	fp, rdb, _ := proxied(t, nil)
	p := newPipe(t, rdb)
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	fp.SetLatency(0, 100*time.Millisecond)
	blocker := goDo(ctx, p, "ping")
	waitStats(t, p, "the first batch in flight", func(s autopipe.Stats) bool { return s.InFlight == 1 })
	batch := [][]any{
		{"evalsha", strings.Repeat("0", 40), 0}, // NOSCRIPT, at the head
		{"set", "str", "v"},
		{"lpush", "str", "x"}, // WRONGTYPE
		{"incr", "n"},
		{"eval", "return redis.error_reply('NOPERM no such right')", 0}, // at the tail
	}
	want := []string{"NOSCRIPT", "", "WRONGTYPE", "", "NOPERM"}
	results := make([]<-chan *redis.Cmd, len(batch))
	for i, args := range batch {
		results[i] = goDo(ctx, p, args...)
		waitStats(t, p, fmt.Sprintf("%d calls queued", i+1), func(s autopipe.Stats) bool { return s.Queued == i+1 })
	}
	if err := (<-blocker).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	for i, ch := range results {
		err := (<-ch).Err()
		switch {
		case want[i] == "" && err != nil:
			t.Errorf("%v: %v, want no error", batch[i], err)
		case want[i] != "" && !redis.HasErrorPrefix(err, want[i]):
			t.Errorf("%v: %v, want a %s error reply", batch[i], err, want[i])
		}
	}
	if n, err := p.Do(ctx, "get", "n").Int(); err != nil || n != 1 {
		t.Errorf("GET n = %d, %v; want 1 (INCR ran once)", n, err)
	}
	if s := p.Stats(); s.Batches != 4 {
		t.Errorf("%d batches, want 4: two pings, the five queued calls, get", s.Batches)
	}
}

// TestConnectionErrorFailsTheWholeBatch resets the connections while one
// batch is in flight and another queued: every command of both fails with a
// connection error, none with a reply.
func TestConnectionErrorFailsTheWholeBatch(t *testing.T) {
	fp, rdb, _ := proxied(t, func(o *redis.Options) { o.MaxRetries = -1 })
	p := newPipe(t, rdb)
	ctx := testkit.Context(t, 10*time.Second)
	if err := p.Do(ctx, "ping").Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	fp.SetLatency(0, 200*time.Millisecond)
	first := goDo(ctx, p, "incr", "a")
	waitStats(t, p, "the first batch in flight", func(s autopipe.Stats) bool { return s.InFlight == 1 })
	var queued []<-chan *redis.Cmd
	for i := range 3 {
		queued = append(queued, goDo(ctx, p, "incr", fmt.Sprint("b", i)))
		waitStats(t, p, "calls queued", func(s autopipe.Stats) bool { return s.Queued == i+1 })
	}
	fp.SetRefuse(true)
	if err := (<-first).Err(); err == nil || isRedisError(err) {
		t.Errorf("in-flight INCR: %v, want a connection error", err)
	}
	var errs []string
	for i, ch := range queued {
		err := (<-ch).Err()
		if err == nil || isRedisError(err) {
			t.Errorf("queued INCR %d: %v, want a connection error", i, err)
			continue
		}
		errs = append(errs, err.Error())
	}
	if len(errs) == len(queued) && (errs[0] != errs[1] || errs[1] != errs[2]) {
		t.Errorf("queued batch's errors %q, want the batch's one error on each", errs)
	}
}

func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// goDo runs p.Do on a goroutine of its own and returns its result's channel.
func goDo(ctx context.Context, p *autopipe.Pipe, args ...any) <-chan *redis.Cmd {
	ch := make(chan *redis.Cmd, 1)
	go func() { ch <- p.Do(ctx, args...) }()
	return ch
}

// TestDoLateAfterWritesPreJustBefore: the command pre sets a connection
// state (CLIENT SETNAME) that the call reads back (CLIENT GETNAME): with
// many callers and batches on several connections, each call must see its
// own pre, written just before it on the same connection.
func TestDoLateAfterWritesPreJustBefore(t *testing.T) {
	lab := redislab.Start(t, 1)
	p := newPipe(t, lab.Clients(t)[0], autopipe.WithMaxInFlight(3))
	ctx := testkit.Context(t, 20*time.Second)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 30 {
				name := fmt.Sprintf("c%d-%d", w, i)
				got, err := p.DoLateAfter(ctx, nil, []any{"client", "setname", name}, "client", "getname").Text()
				if err != nil || got != name {
					t.Errorf("CLIENT GETNAME after its own SETNAME = %q, %v; want %q", got, err, name)
					return
				}
			}
		})
	}
	wg.Wait()
}

package autopipe_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// server starts one local redis-server for an example and returns its
// address and a function that stops it. Where none is installed the test
// binary skips the examples (redislab.SkipExamplesWithoutServer).
func server() (string, func()) {
	lab, stop, err := redislab.Launch(1)
	if err != nil {
		panic(err)
	}
	return lab.Addrs()[0], stop
}

// Concurrent callers share round trips; each gets its own reply.
func Example() {
	addr, stop := server()
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	p := autopipe.New(rdb)
	defer p.Close()

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second) // per call
			defer cancel()
			if err := p.Do(ctx, "sadd", "seen", i).Err(); err != nil {
				fmt.Println(err)
			}
		})
	}
	wg.Wait()
	n, err := p.Do(context.Background(), "scard", "seen").Int()
	fmt.Println(n, err)
	// Output: 8 <nil>
}

// A call that stops waiting returns ErrAbandoned at once; its real outcome
// still arrives, through late — here to a caller that would undo it.
func ExamplePipe_DoLate() {
	addr, stop := server()
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	p := autopipe.New(rdb)
	defer p.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	late := make(chan *redis.Cmd, 1)
	// BLPOP stands in for a slow master: it answers once the list has an
	// element.
	err := p.DoLate(ctx, func(cmd *redis.Cmd) { late <- cmd }, "blpop", "jobs", 0).Err()
	fmt.Println("gave up:", err)
	rdb.RPush(context.Background(), "jobs", "j1")
	cmd := <-late
	if errors.Is(cmd.Err(), autopipe.ErrNotSent) {
		return // it never reached the server: nothing to undo
	}
	reply, err := cmd.StringSlice()
	fmt.Println("late:", reply, err)
	// Output:
	// gave up: autopipe: caller stopped waiting: context deadline exceeded
	// late: [jobs j1] <nil>
}

package autopipe_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/autopipe"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// A connection the server refuses to set up (a DB it does not have): every
// call of the batch fails with the server's answer, matching ErrSetup and
// ErrNotSent — not an empty reply, as go-redis leaves it.
func TestSetupFailureReachesEveryCall(t *testing.T) {
	lab := redislab.Start(t, 1)
	rdb := lab.Clients(t, func(o *redis.Options) { o.DB = 99 })[0]
	p := newPipe(t, rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, cmd := range []*redis.Cmd{p.Do(ctx, "get", "k"), p.Do(ctx, "incr", "n")} {
		err := cmd.Err()
		if !errors.Is(err, autopipe.ErrSetup) || !errors.Is(err, autopipe.ErrNotSent) || !strings.Contains(err.Error(), "DB index is out of range") {
			t.Errorf("%v: err = %v, want ErrSetup and ErrNotSent naming SELECT's error", cmd.Args(), err)
		}
	}
}

package testkit

import (
	"context"
	"os"

	"github.com/redis/go-redis/v9"
)

// QuietRedis silences go-redis's own log — chiefly "failed to dial" for
// every call to a master a test killed or froze on purpose, which made up
// most of a test run's output — unless REDIS_LOG=1 asks to see it. Main
// calls it; a TestMain that cannot use Main calls it itself. go-redis has
// one logger per process, so the last call wins.
func QuietRedis() {
	if os.Getenv("REDIS_LOG") != "1" {
		redis.SetLogger(quiet{})
	}
}

// quiet is a go-redis logger that drops every line.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

package chaos_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestMain(m *testing.M) {
	// Dial failures to killed masters are the point of these tests; go-redis
	// would log each one. Set CHAOS_REDIS_LOG=1 to see them.
	if os.Getenv("CHAOS_REDIS_LOG") == "" {
		redis.SetLogger(quiet{})
	}
	testkit.Main(m)
}

// quiet is a go-redis logger that drops everything.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

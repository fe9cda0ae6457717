package chaos_test

import (
	"testing"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// Dial failures to killed masters are the point of these tests; go-redis
// would log each one: testkit.Main silences it (REDIS_LOG=1 to see them).
func TestMain(m *testing.M) { testkit.Main(m) }

package master

import (
	"testing"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m)
}

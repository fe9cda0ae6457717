package testkit_test

import (
	"sync"
	"testing"

	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

func TestBufferTakesConcurrentWrites(t *testing.T) {
	var b testkit.Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Errorf("len = %d, want 800", got)
	}
}

package master

import (
	"testing"

	"github.com/seed818c56a1/quorumlock/internal/hashslot"
)

// Every slot has a trust record of its own, which hashes to it.
func TestTrustKeyOfEverySlot(t *testing.T) {
	for s := range hashslot.Count {
		if got := SlotOf(trustKeyOf(s)); got != s {
			t.Fatalf("trustKeyOf(%d) = %q hashes to slot %d", s, trustKeyOf(s), got)
		}
	}
}

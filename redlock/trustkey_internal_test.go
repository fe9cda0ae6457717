package redlock

import "testing"

// Every slot has a trust record of its own, which hashes to it.
func TestTrustKeyOfEverySlot(t *testing.T) {
	for s := range clusterSlots {
		if got := slotOf(trustKeyOf(s)); got != s {
			t.Fatalf("trustKeyOf(%d) = %q hashes to slot %d", s, trustKeyOf(s), got)
		}
	}
}

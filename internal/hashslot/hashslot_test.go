package hashslot_test

import (
	"testing"

	"github.com/seed818c56a1/quorumlock/internal/hashslot"
)

// Values from Redis's CLUSTER KEYSLOT (the cluster specification's
// examples and a hash tag's rules).
func TestOf(t *testing.T) {
	for _, tt := range []struct {
		key  string
		want int
	}{
		{"123456789", 12739}, // CRC16 XMODEM check value 0x31C3 mod 16384
		{"foo", 12182},
		{"{user1000}.following", hashslot.Of("user1000")},
		{"foo{}{bar}", hashslot.Of("foo{}{bar}")}, // empty tag: the whole key
		{"foo{{bar}}zap", hashslot.Of("{bar")},
		{"", 0},
	} {
		if got := hashslot.Of(tt.key); got != tt.want {
			t.Errorf("Of(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

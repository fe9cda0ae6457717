package redlock

import "testing"

// TestKeysNames pins the names Keys returns: one string sliced six ways
// must read exactly as the six names built one by one.
func TestKeysNames(t *testing.T) {
	for _, tc := range []struct{ prefix, key string }{
		{"ql:", "job"}, {"", "a}b"}, {"p", "%x"}, {"", ""},
	} {
		lock := tc.prefix + "{" + hashTag(tc.key) + "}"
		want := KeyNames{Lock: lock, Fence: lock + ":fence", Queue: lock + ":queue", Leases: lock + ":leases",
			Readers: lock + ":readers", Channel: lock + ":free"}
		if got := Keys(tc.prefix, tc.key); got != want {
			t.Errorf("Keys(%q, %q) = %+v, want %+v", tc.prefix, tc.key, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Keys("ql:", "job") }); n > 1 {
		t.Errorf("Keys allocates %v times, want 1", n)
	}
}

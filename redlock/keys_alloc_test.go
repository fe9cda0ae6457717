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

// TestKeyCache checks that the Client's cache of key names answers as
// newKeysets does, shares one entry per key, and stays bounded.
func TestKeyCache(t *testing.T) {
	var kc keyCache
	for i := range keyCacheSize + 10 {
		key := "k" + string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260))
		kss, names := kc.keysOf("p:", []string{key})
		if want := newKeysets("p:", []string{key}); len(kss) != 1 || kss[0] != want[0] {
			t.Fatalf("keysOf(%q) = %+v, want %+v", key, kss, want)
		}
		if names[0][0] != kss[0].Lock || names[0][5] != kss[0].Channel {
			t.Fatalf("keysOf(%q): boxed names %v, want %+v", key, names[0], kss[0])
		}
		if len(kc.m) > keyCacheSize {
			t.Fatalf("the cache holds %d entries, more than %d", len(kc.m), keyCacheSize)
		}
	}
	a, _ := kc.keysOf("p:", []string{"same"})
	b, _ := kc.keysOf("p:", []string{"same"})
	if &a[0] != &b[0] {
		t.Errorf("a key's names are built twice")
	}
	if c, _ := kc.keysOf("q:", []string{"same"}); c[0].Lock != "q:{same}" {
		t.Errorf("another prefix's names: %q", c[0].Lock)
	}
	if many, _ := kc.keysOf("p:", []string{"x", "y"}); len(many) != 2 || many[1].Lock != "p:{y}" {
		t.Errorf("two keys' names: %+v", many)
	}
}

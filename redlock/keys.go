package redlock

import (
	"strings"

	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// MaxKeyLen bounds the length in bytes of a key (and of a WithPrefix prefix);
// longer ones are refused with ErrInvalid.
const MaxKeyLen = 1024

// KeyNames are the names the library uses on a node for one lock key. Every
// key shares one hash tag, so that they live on one Redis Cluster slot.
type KeyNames struct {
	Lock    string // hash: owner and holds; its TTL is the lease
	Fence   string // fencing counter; its TTL is the fencing retention
	Queue   string // waiters in ticket order; its TTL is the queue lease
	Leases  string // waiters' lease ends; the same TTL
	Readers string // readers (RLock) by lease end; its TTL is at least the longest lease
	Channel string // announces a freed lock (a channel, not a key)
}

// Keys returns the names the library uses on the nodes for key under prefix:
// <prefix>{<tag>} and its siblings (:fence, :queue, :leases, :readers, and
// the :free channel), one hash tag, so that a node may be a Redis Cluster.
// The mapping is one-to-one: <tag> is key itself unless key holds a '}'
// (which would end the hash tag early) or starts with '%'; such a key is
// written as '%' followed by the key with every '%' escaped as %25 and
// every '}' as %7D. Keys checks nothing: a key the acquisitions would
// refuse (empty, longer than MaxKeyLen) still gets names. Every name the
// library writes expires: the lock with its lease, the line with the
// waiters' leases, the readers with the longest reader's lease, the
// fencing counter with its retention.
func Keys(prefix, key string) KeyNames {
	tag := hashTag(key)
	// Every name is <lock><suffix>: the five are written one after the
	// other into one string, and each is a slice of it (the lock's is the
	// start of the first) — one allocation instead of six.
	n := len(prefix) + len(tag) + 2
	var b strings.Builder
	b.Grow(5*n + suffixesLen)
	for _, suffix := range keySuffixes {
		b.WriteString(prefix)
		b.WriteByte('{')
		b.WriteString(tag)
		b.WriteByte('}')
		b.WriteString(suffix)
	}
	all := b.String()
	var names [5]string
	at := 0
	for i, suffix := range keySuffixes {
		names[i] = all[at : at+n+len(suffix)]
		at += n + len(suffix)
	}
	return KeyNames{Lock: all[:n], Fence: names[0], Queue: names[1], Leases: names[2], Readers: names[3], Channel: names[4]}
}

// keySuffixes follow the lock's name in its siblings' names, in KeyNames'
// order.
var keySuffixes = [5]string{":fence", ":queue", ":leases", ":readers", ":free"}

const suffixesLen = len(":fence:queue:leases:readers:free")

// hashTag returns the text between the braces of key's names.
func hashTag(key string) string {
	if !strings.Contains(key, "}") && !strings.HasPrefix(key, "%") {
		return key
	}
	return "%" + strings.NewReplacer("%", "%25", "}", "%7D").Replace(key)
}

// keyset is the names of one key, as the scripts take them.
type keyset = KeyNames

// keysets are the names of every key of one holding, in the caller's order:
// one for Lock, several for LockMany.
type keysets []keyset

func newKeysets(prefix string, keys []string) keysets {
	kss := make(keysets, len(keys))
	for i, k := range keys {
		kss[i] = Keys(prefix, k)
	}
	return kss
}

// scriptKeys are a script's KEYS: per key, the first per of its lock,
// fencing counter, waiters' queue, their leases and readers — five for
// acquire.lua, racquire.lua and rrelease.lua, four for release.lua and
// leave.lua (prelude.lua: lock_keys).
func (kss keysets) scriptKeys(per int) []string {
	out := make([]string, 0, per*len(kss))
	for _, k := range kss {
		out = append(out, []string{k.Lock, k.Fence, k.Queue, k.Leases, k.Readers}[:per]...)
	}
	return out
}

// channels are the keys' channels, on which a freed lock is announced.
func (kss keysets) channels() []string {
	out := make([]string, len(kss))
	for i, k := range kss {
		out[i] = k.Channel
	}
	return out
}

// checkKey refuses keys the library cannot lock: empty or too long.
func checkKey(key string) error {
	switch {
	case key == "":
		return invalid("empty key")
	case len(key) > MaxKeyLen:
		return invalid("key %s is %d bytes, longer than MaxKeyLen (%d)", shortKey(key), len(key), MaxKeyLen)
	}
	return nil
}

// checkPrefix refuses prefixes that would break the hash tag.
func checkPrefix(p string) error {
	switch {
	case strings.ContainsAny(p, "{}"):
		return invalid("prefix %s contains a brace: the hash tag of every key is the library's", shortKey(p))
	case len(p) > MaxKeyLen:
		return invalid("prefix is %d bytes, longer than MaxKeyLen (%d)", len(p), MaxKeyLen)
	}
	return nil
}

// shortKey quotes key for an error message, cut short when long
// (master.ShortKey).
var shortKey = master.ShortKey

// checkKeys refuses keys the library cannot lock together: each must be a
// valid key, none twice, and on cluster nodes all in one hash slot.
func (c *Client) checkKeys(keys []string) error {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return err
		}
		if seen[k] {
			return invalid("key %s given twice", shortKey(k))
		}
		seen[k] = true
	}
	if len(keys) > 1 && c.hasCluster() {
		slot := master.SlotOf(Keys("", keys[0]).Lock)
		for _, k := range keys[1:] {
			if s := master.SlotOf(Keys("", k).Lock); s != slot {
				return invalid("keys %s and %s are on hash slots %d and %d: a cluster node takes several keys at once only on one slot",
					shortKey(keys[0]), shortKey(k), slot, s)
			}
		}
	}
	return nil
}

// hasCluster reports whether any node is a Redis Cluster.
func (c *Client) hasCluster() bool {
	for _, n := range c.nodes {
		if n.master.Cluster() {
			return true
		}
	}
	return false
}

package redlock

// keyset names everything the library keeps on a node for one key. All
// share one hash tag, {key}, so that they live on one Redis Cluster slot.
type keyset struct {
	lock    string // hash: owner and holds; its TTL is the lease
	fence   string // fencing counter; never expires
	queue   string // waiters in ticket order
	leases  string // waiters' lease ends
	channel string // announces a freed lock (a channel, not a key)
}

func newKeyset(prefix, key string) keyset {
	lock := prefix + "{" + key + "}"
	return keyset{lock: lock, fence: lock + ":fence", queue: lock + ":queue", leases: lock + ":leases", channel: lock + ":free"}
}

// acquireKeys are the KEYS of acquire.lua.
func (k *keyset) acquireKeys() []string { return []string{k.lock, k.fence, k.queue, k.leases} }

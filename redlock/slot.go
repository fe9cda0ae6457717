package redlock

import "github.com/seed818c56a1/quorumlock/internal/hashslot"

// slotOf returns the Redis Cluster hash slot of key (CLUSTER KEYSLOT).
func slotOf(key string) int { return hashslot.Of(key) }

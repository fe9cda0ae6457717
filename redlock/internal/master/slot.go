package master

import "github.com/seed818c56a1/quorumlock/internal/hashslot"

// SlotOf returns the Redis Cluster hash slot of key (CLUSTER KEYSLOT).
func SlotOf(key string) int { return hashslot.Of(key) }

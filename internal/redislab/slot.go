package redislab

import (
	"strconv"

	"github.com/seed818c56a1/quorumlock/internal/hashslot"
)

// Slot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of its
// hash tag — the text between the first '{' and the next '}', if not empty
// — or of the whole key, modulo 16384. It is CLUSTER KEYSLOT computed
// locally, so that a test can pick keys on a given shard.
func Slot(key string) int { return hashslot.Of(key) }

// Keys returns n distinct names, prefix followed by a number, whose slots
// lie in the shard's starting range (First..Last). Used as lock keys of
// package redlock, which puts a key inside one hash tag, they land on this
// shard while no slot has moved.
func (s *Shard) Keys(prefix string, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := prefix + strconv.Itoa(i)
		if slot := Slot(k); slot >= s.First && slot <= s.Last {
			keys = append(keys, k)
		}
	}
	return keys
}

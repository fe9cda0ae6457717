// Package hashslot computes Redis Cluster hash slots, as CLUSTER KEYSLOT
// does, for the library (which keys one script may touch together) and the
// test lab (which keys land on a given shard).
package hashslot

import "strings"

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Of returns the hash slot of key: CRC16 (XMODEM) of its hash tag — the
// text between the first '{' and the next '}', when not empty — or of the
// whole key, modulo Count.
func Of(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Count
}

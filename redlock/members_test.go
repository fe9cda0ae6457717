package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// Issue 20, item 4: members whose seed lists overlap reach one cluster, and
// are refused; members with disjoint seeds are accepted. Nothing is sent.
func TestNewRefusesOverlappingMembers(t *testing.T) {
	cluster := func(addrs ...string) redis.UniversalClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { c.Close() })
		return c
	}
	single := func(addr string) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		return c
	}
	ring := func(addr string) redis.UniversalClient {
		c := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": addr}})
		t.Cleanup(func() { c.Close() })
		return c
	}
	refused := []struct {
		name  string
		nodes []redis.UniversalClient
	}{
		{"seeds [a b c] and [b]", []redis.UniversalClient{cluster("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"), cluster("127.0.0.1:2"), cluster("127.0.0.1:9")}},
		{"seeds [a b] and [c b] under another name", []redis.UniversalClient{cluster("127.0.0.1:1", "127.0.0.1:2"), cluster("127.0.0.1:3", "localhost:2"), single("127.0.0.1:9")}},
		{"a cluster and a plain client of one of its seeds", []redis.UniversalClient{single("127.0.0.1:5"), cluster("127.0.0.1:4", "127.0.0.1:5"), single("127.0.0.1:6")}},
		{"a ring and a cluster over one server", []redis.UniversalClient{ring("127.0.0.1:7"), cluster("127.0.0.1:8", "127.0.0.1:7")}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.New(tc.nodes)
			if err == nil {
				c.Close()
				t.Fatal("New succeeded, want an error: one cluster would count as two members")
			}
			if !errors.Is(err, redlock.ErrInvalid) || !strings.HasPrefix(err.Error(), "redlock: ") || !strings.Contains(err.Error(), "both reach") {
				t.Fatalf("New error = %q, want a redlock: ErrInvalid saying two members both reach one server", err)
			}
		})
	}
	disjoint := []redis.UniversalClient{cluster("127.0.0.1:1", "127.0.0.1:2"), cluster("127.0.0.1:3", "127.0.0.1:4"), single("127.0.0.1:5")}
	c, err := redlock.New(disjoint)
	if err != nil {
		t.Fatalf("New over members with disjoint seeds: %v", err)
	}
	c.Close()
}

package redlock

import (
	"github.com/redis/go-redis/v9"
)

// sharedServer refuses two members that name a common server: a
// ClusterClient seeded with [a b c] and another with [b], or a plain client
// of b beside them, reach the same cluster, whose failure is then counted
// twice by the majority. Every seed of a cluster or ring client is compared,
// not the list as a whole: any one seed leads to the whole cluster.
//
// Only addresses given are compared (normalAddr), so aliases (DNS names,
// NAT) and a cluster given through seeds of disjoint nodes are not caught
// here: the Client catches the latter at first contact, by the nodes'
// cluster IDs (samecluster.go).
func sharedServer(nodes []redis.UniversalClient) error {
	seen := map[string]int{} // server address → index of the first member naming it
	for i, rdb := range nodes {
		for _, addr := range serversOf(rdb) {
			if j, ok := seen[addr]; ok && j != i {
				return invalid("nodes %d and %d both reach the server %s: one server or cluster would count as two members; the quorum needs independent masters", j, i, addr)
			}
			seen[addr] = i
		}
	}
	return nil
}

// serversOf returns the normalized addresses rdb was given: its one
// server, or each seed of a cluster or ring. It returns none for client
// types that expose no address.
func serversOf(rdb redis.UniversalClient) []string {
	var addrs []string
	if isFailover(rdb) {
		return nil // a placeholder address (failoverAddr), not a server's
	}
	switch r := rdb.(type) {
	case *redis.Client:
		addrs = []string{r.Options().Addr}
	case *redis.ClusterClient:
		addrs = r.Options().Addrs
	case *redis.Ring:
		for _, a := range r.Options().Addrs {
			addrs = append(addrs, a)
		}
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = normalAddr(a)
	}
	return out
}

package master

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// SharedServer refuses two members that name a common server: a
// ClusterClient seeded with [a b c] and another with [b], or a plain client
// of b beside them, reach the same cluster, whose failure is then counted
// twice by the majority. Every seed of a cluster or ring client is compared,
// not the list as a whole: any one seed leads to the whole cluster.
//
// Only addresses given are compared (NormalAddr), so aliases (DNS names,
// NAT) and a cluster given through seeds of disjoint nodes are not caught
// here: the Client catches the latter at first contact, by the nodes'
// cluster IDs (samecluster.go). The error is the refusal's text alone: the
// caller says what kind of error it is.
func SharedServer(nodes []redis.UniversalClient) error {
	seen := map[string]int{} // server address → index of the first member naming it
	for i, rdb := range nodes {
		for _, addr := range serversOf(rdb) {
			if j, ok := seen[addr]; ok && j != i {
				return fmt.Errorf("nodes %d and %d both reach the server %s: one server or cluster would count as two members; the quorum needs independent masters", j, i, addr)
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
	if IsFailover(rdb) {
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
		out[i] = NormalAddr(a)
	}
	return out
}

// AddrOf names the server(s) rdb talks to, so that New can refuse the same
// master twice. Aliases it cannot see through (DNS names, NAT) are not caught.
func AddrOf(rdb redis.UniversalClient) string {
	if IsFailover(rdb) {
		// Every failover client has the same placeholder address: two are
		// told apart at first contact, by the master they reach
		// (samecluster.go).
		return ""
	}
	switch r := rdb.(type) {
	case *redis.Client:
		return NormalAddr(r.Options().Addr)
	case *redis.ClusterClient:
		return joinAddrs(r.Options().Addrs)
	case *redis.Ring:
		var addrs []string
		for _, a := range r.Options().Addrs {
			addrs = append(addrs, a)
		}
		return joinAddrs(addrs)
	}
	return ""
}

// failoverAddr is the address go-redis gives every client of
// redis.NewFailoverClient in place of its master's, which it asks the
// sentinels for at each dial.
const failoverAddr = "FailoverClient"

// IsFailover reports whether rdb is a Sentinel failover client: its
// master moves with every failover, and a promoted replica may lack a
// grant, so its scripts time the master it reaches from its promotion
// (prelude.lua: master_served_ms; docs/SHARDS.md, "Sentinel members").
func IsFailover(rdb redis.UniversalClient) bool {
	r, ok := rdb.(*redis.Client)
	return ok && r.Options().Addr == failoverAddr
}

func joinAddrs(addrs []string) string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = NormalAddr(a)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// NormalAddr writes a host:port address one way: the host in lower case,
// "localhost" and "" as 127.0.0.1.
func NormalAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(strings.ToLower(host), port)
}

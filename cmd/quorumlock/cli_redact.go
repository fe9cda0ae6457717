package main

import (
	"net/url"
	"strings"
)

// redacted replaces credentials in the addresses quorumlock shows.
const redacted = "xxxxx"

// redactAddr returns addr — host:port or a redis:// URL — without its
// credentials: the userinfo of a URL (redis://user:PW@host) or of a bare
// user:PW@host:port, and a password query parameter. Nothing quorumlock
// prints may carry a node's password.
func redactAddr(addr string) string {
	scheme, rest, ok := strings.Cut(addr, "://")
	if !ok {
		scheme, rest = "", addr
	}
	host, query, hasQuery := strings.Cut(rest, "?")
	if at := strings.LastIndex(host, "@"); at >= 0 {
		host = redacted + host[at:]
	}
	if hasQuery {
		query = redactQuery(query)
		host += "?" + query
	}
	if ok {
		return scheme + "://" + host
	}
	return host
}

// redactQuery hides the value of every query parameter that may hold a
// secret.
func redactQuery(query string) string {
	params := strings.Split(query, "&")
	for i, p := range params {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil && strings.Contains(strings.ToLower(n), "pass") {
			params[i] = name + "=" + redacted
		}
	}
	return strings.Join(params, "&")
}

// redact replaces every node address of ns in s with its redacted form.
func (ns *nodeSet) redact(s string) string {
	return redactAll(s, ns.addrs)
}

// redactAll replaces each of addrs in s with its redacted form.
func redactAll(s string, addrs []string) string {
	for _, a := range addrs {
		if r := redactAddr(a); r != a {
			s = strings.ReplaceAll(s, a, r)
		}
	}
	return s
}

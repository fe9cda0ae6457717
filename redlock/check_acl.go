package redlock

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The ACL check: every command the Client sends, and every command its
// scripts call, asked of the server for the current user with ACL DRYRUN
// on the keys and channel the library uses under the prefix.

// scriptCalls matches the commands a script calls.
var scriptCalls = regexp.MustCompile(`redis\.p?call\('([A-Za-z]+)'`)

// scriptCommands returns the commands the library's scripts call, upper
// case, sorted, read from the scripts themselves.
func scriptCommands() []string {
	var out []string
	for _, src := range []string{preludeSrc, acquireSrc, racquireSrc, permitSrc, extendSrc, releaseSrc, rreleaseSrc, fenceSrc, leaveSrc} {
		for _, m := range scriptCalls.FindAllStringSubmatch(src, -1) {
			out = append(out, strings.ToUpper(m[1]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// aclProbes returns one command line per command the library needs, with
// arguments that name a lock's keys and channel under prefix. CLUSTER is
// needed on cluster members only.
func aclProbes(prefix string, cluster bool) [][]any {
	k := Keys(prefix, "doctor")
	probes := [][]any{
		{"EVALSHA", strings.Repeat("0", 40), 1, k.Lock}, {"EVAL", "return 1", 1, k.Lock},
		{"PING"}, {"ROLE"}, {"INFO", "server"}, {"SUBSCRIBE", k.Channel}, {"GET", TrustKey},
	}
	for _, c := range scriptCommands() {
		if c == "CLUSTER" && !cluster {
			continue
		}
		probes = append(probes, probeOf(c, k))
	}
	return probes
}

// probeOf is a command line of c with well-formed arguments.
func probeOf(c string, k KeyNames) []any {
	switch c {
	case "TIME", "LASTSAVE":
		return []any{c}
	case "INFO":
		return []any{c, "server"}
	case "CLUSTER":
		return []any{c, "MYID"}
	case "PUBLISH":
		return []any{c, k.Channel, "m"}
	case "SET":
		return []any{c, k.Lock, "v"}
	case "HDEL", "HGET", "HMGET", "ZRANK", "ZREM", "ZSCORE":
		return []any{c, k.Lock, "m"}
	case "HSET":
		return []any{c, k.Lock, "f", "v"}
	case "PEXPIRE", "PEXPIREAT":
		return []any{c, k.Lock, 1}
	case "ZADD":
		return []any{c, k.Lock, 1, "m"}
	case "ZCOUNT", "ZRANGE", "ZRANGEBYSCORE", "ZREMRANGEBYSCORE":
		return []any{c, k.Lock, 0, 1}
	}
	return []any{c, k.Lock}
}

// acl checks that the current user may run every command of aclProbes.
// A user refused ACL WHOAMI or ACL DRYRUN itself is probed with EVALSHA
// alone (NOSCRIPT means allowed), and the rest is reported as unchecked.
func (sc *serverCheck) acl(ctx context.Context, cfg *config, s server, cluster bool) {
	const want = "every command the client and its scripts use allowed on the prefix's keys and channels"
	user, err := s.rdb.Do(ctx, "ACL", "WHOAMI").Text()
	if err != nil {
		sc.aclProbe(ctx, s, want)
		return
	}
	var denied []string
	for _, p := range aclProbes(cfg.prefix, cluster) {
		reply, err := s.rdb.Do(ctx, append([]any{"ACL", "DRYRUN", user}, p...)...).Text()
		switch {
		case err != nil && isNoPerm(err): // DRYRUN itself is refused
			sc.aclProbe(ctx, s, want)
			return
		case err == nil && reply == "OK":
			continue
		case err == nil:
			denied = append(denied, p[0].(string)+" ("+reply+")")
		default:
			denied = append(denied, p[0].(string)+" ("+oneLine(err.Error())+")")
		}
	}
	sc.aclVerdict(s, user, denied, want)
}

// aclVerdict adds the finding of a DRYRUN check.
func (sc *serverCheck) aclVerdict(s server, user string, denied []string, want string) {
	if len(denied) == 0 {
		sc.add(s, "acl", SeverityOK, "user "+user+": every command allowed", want, "the scripts run whole")
		return
	}
	sc.add(s, "acl", SeverityFail, "user "+user+" denied "+strings.Join(denied, "; "), want,
		"a refused command fails the script on this master: it never grants, so it counts as down for every lock")
}

// aclProbe checks EVALSHA by running it with a script that does not exist,
// for a user refused ACL DRYRUN: NOSCRIPT says the command is allowed.
func (sc *serverCheck) aclProbe(ctx context.Context, s server, want string) {
	err := s.rdb.Do(ctx, "EVALSHA", strings.Repeat("0", 40), 0).Err()
	switch {
	case err != nil && isNoPerm(err):
		sc.add(s, "acl", SeverityFail, "EVALSHA: "+oneLine(err.Error()), want,
			"the scripts cannot run on this master: it never grants, so it counts as down for every lock")
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		sc.add(s, "acl", SeverityWarn, "EVALSHA allowed; the scripts' commands unchecked (ACL WHOAMI or ACL DRYRUN refused to this user)", want,
			"a command a script calls that the user may not run fails that script; allow ACL DRYRUN to check them")
	default:
		sc.add(s, "acl", SeverityWarn, "EVALSHA probe: "+fmt.Sprint(err), want, "cannot tell whether the scripts may run")
	}
}

func isNoPerm(err error) bool { return redis.HasErrorPrefix(err, "NOPERM") }

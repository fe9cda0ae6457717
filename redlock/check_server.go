package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// The checks of one server process: what INFO and CONFIG say of its role,
// eviction policy, persistence and start; then its ACL, round trip and clock.

// A serverCheck is what the checks of one server found.
type serverCheck struct {
	findings  []Finding
	reachable bool
	runID     string
	youngFor  time.Duration // how long its grants wait under the guard; 0 if they count now
}

// add appends a finding about s.
func (sc *serverCheck) add(s server, check string, sev Severity, got, want, why string) {
	sc.findings = append(sc.findings, Finding{Addr: s.addr, Check: check, Severity: sev, Got: got, Want: want, Why: why})
}

// checkServer runs every per-server check on s.
func checkServer(ctx context.Context, cfg *config, s server) serverCheck {
	var sc serverCheck
	info, err := s.rdb.InfoMap(ctx, "server", "replication", "memory", "persistence").Result()
	if err != nil {
		sc.add(s, "reach", SeverityFail, "INFO: "+oneLine(err.Error()), "answers INFO",
			"a master that does not answer cannot grant; one that refuses INFO cannot report restarts (restart guard)")
		return sc
	}
	sc.reachable = true
	sc.runID = info["Server"]["run_id"]
	cluster := info["Server"]["redis_mode"] == "cluster"
	sc.role(s, info["Replication"], cluster)
	sc.eviction(s, info["Memory"])
	sc.persistence(ctx, cfg, s, info["Persistence"])
	sc.start(ctx, cfg, s, info["Server"])
	sc.acl(ctx, cfg, s, cluster)
	sc.rtt(ctx, cfg, s)
	sc.clock(ctx, cfg, s)
	return sc
}

// role checks that s is a master, and says what a failover to one of its
// replicas would cost.
func (sc *serverCheck) role(s server, repl map[string]string, cluster bool) {
	role, replicas := repl["role"], repl["connected_slaves"]
	switch {
	case role != "master":
		sc.add(s, "role", SeverityFail, "role:"+role+" of "+repl["master_host"]+":"+repl["master_port"], "an independent master",
			"a replica refuses the scripts' writes, and beside its master it would be a second vote from one data set")
	case replicas != "" && replicas != "0" && cluster:
		sc.add(s, "role", SeverityOK, "master with "+replicas+" replica(s), in a cluster", "a master",
			"replication is asynchronous, so a promoted replica may lack a lease; the restart guard holds a promoted primary's grants back as a restarted server's (served_ms), so a failover costs time, not safety")
	case replicas != "" && replicas != "0":
		sc.add(s, "role", SeverityWarn, "master with "+replicas+" connected replica(s)", "a master without replicas",
			"replication is asynchronous: a replica promoted (Sentinel, or by hand) may lack a lease granted here, and having run long it is not held back by the restart guard, which covers restarts only")
	default:
		sc.add(s, "role", SeverityOK, "master, no replicas", "an independent master", "its grants are its own vote")
	}
}

// eviction checks that s never evicts a lock key to make room.
func (sc *serverCheck) eviction(s server, mem map[string]string) {
	policy, limit := mem["maxmemory_policy"], mem["maxmemory"]
	got := "maxmemory-policy " + policy + ", maxmemory " + limit
	const want = "maxmemory-policy noeviction"
	switch {
	case policy == "noeviction":
		sc.add(s, "eviction", SeverityOK, got, want, "when memory is full writes fail; no lock key is dropped")
	case limit == "0" || limit == "":
		sc.add(s, "eviction", SeverityWarn, got, want,
			"no memory limit now, so nothing is evicted; set a maxmemory and this policy would drop held locks' keys")
	case strings.HasPrefix(policy, "volatile"):
		sc.add(s, "eviction", SeverityFail, got, want,
			"every lock key has a TTL, so volatile-* policies evict exactly them under memory pressure: a held lock vanishes and a second holder gets it")
	default:
		sc.add(s, "eviction", SeverityFail, got, want,
			"under memory pressure a held lock's key may be evicted, and a second holder gets the lock")
	}
}

// persistence checks whether s keeps its keys across a restart, and if not
// whether the restart guard makes up for it.
func (sc *serverCheck) persistence(ctx context.Context, cfg *config, s server, pers map[string]string) {
	aof := pers["aof_enabled"] == "1"
	fsync, err := configGet(ctx, s.rdb, "appendfsync")
	got := "appendonly no"
	switch {
	case aof && err != nil:
		got = "appendonly yes, appendfsync unknown (CONFIG GET: " + oneLine(err.Error()) + ")"
	case aof:
		got = "appendonly yes, appendfsync " + fsync
	}
	const want = "appendonly yes, appendfsync always"
	guard := cfg.restartGuard()
	switch {
	case aof && fsync == "always":
		sc.add(s, "persistence", SeverityOK, got, want, "a restart keeps every lease it granted")
	case guard == 0:
		sc.add(s, "persistence", SeverityFail, got, want,
			"a crash or restart may lose keys of live leases, and the restart guard is off (WithRestartGuard(0)): the restarted master grants them again")
	default:
		sc.add(s, "persistence", SeverityWarn, got, want, fmt.Sprintf(
			"a crash or restart may lose keys of live leases; only the restart guard keeps that safe: a restarted master's grants are not counted for %v after it starts (keep the guard on)", guardOf(cfg)))
	}
}

// configGet reads one CONFIG parameter of rdb.
func configGet(ctx context.Context, rdb *redis.Client, name string) (string, error) {
	m, err := rdb.ConfigGet(ctx, name).Result()
	if err != nil {
		return "", err
	}
	v, ok := m[name]
	if !ok {
		return "", errors.New("no such parameter")
	}
	return v, nil
}

// guardOf is how long a restarted server's grants wait at most: the
// explicit guard, or under the default one oldAge (guard.go).
func guardOf(cfg *config) time.Duration {
	if cfg.defaultGuard() {
		return oldAge(cfg.ttl)
	}
	return cfg.restartGuard()
}

// start says whether s's grants count now — vouched for, or up for the
// guard — or how long they wait, by the Client's own rule (counted).
func (sc *serverCheck) start(ctx context.Context, cfg *config, s server, srv map[string]string) {
	guard := guardOf(cfg)
	if cfg.restartGuard() == 0 {
		sc.add(s, "start", SeverityOK, "restart guard off", "any uptime", "grants count at once, restarted or not")
		return
	}
	up, _ := strconv.Atoi(srv["uptime_in_seconds"])
	uptime := time.Duration(up) * time.Second
	vouched, err := master.VouchedRecord(ctx, s.rdb, srv)
	now := time.Now()
	st := master.StartState{RunID: sc.runID, Started: now.Add(-max(0, uptime-master.UptimeSlack))}
	if vouched {
		st.Started = time.Time{}
	}
	got := fmt.Sprintf("up %v, run_id %.8s", uptime, sc.runID)
	want := fmt.Sprintf("up %v, or vouched for (quorumlock trust)", guard)
	var ge *guardError
	switch err2 := counted(st, guard, now); {
	case err != nil:
		sc.add(s, "start", SeverityWarn, got+"; vouch unreadable: "+oneLine(err.Error()), want, "cannot tell whether it was vouched for")
	case vouched:
		sc.add(s, "start", SeverityOK, got+", vouched for", want, "vouched for as a new master: its grants count at once")
	case errors.As(err2, &ge):
		sc.youngFor = ge.left
		sc.add(s, "start", SeverityWarn, got, want, fmt.Sprintf(
			"it may have restarted empty: its grants are not counted for %v more (restart guard; less if the TTLs in use are short: guard.go); if it is a new master, vouch for it",
			ge.left.Round(time.Second)))
	default:
		sc.add(s, "start", SeverityOK, got, want, "up longer than the restart guard: its grants count")
	}
}

package redlock

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// Check asks every master whether it is fit to hold locks: the assumptions
// Redlock's guarantees rest on (docs/SAFETY.md), which nothing else verifies until
// two holders meet. quorumlock doctor is its command-line face.

// DefaultClockSample is how long Check compares each master's clock with
// the local one (WithClockSample).
const DefaultClockSample = 3 * time.Second

// WithClockSample sets how long Check samples each master's TIME against
// the local monotonic clock; 0 skips the clock-rate check. An option of
// Check only; New and the calls ignore it. Default DefaultClockSample.
func WithClockSample(d time.Duration) Option { return func(cfg *config) { cfg.clockSample = d } }

// A Severity grades a Finding.
type Severity int

// Severities, from best to worst.
const (
	SeverityOK   Severity = iota // the assumption holds
	SeverityWarn                 // it holds, at a cost (availability), or could not be read
	SeverityFail                 // it does not hold: a lock may be granted to two holders, or never
)

var severityNames = [...]string{"ok", "warn", "fail"}

// String returns "ok", "warn" or "fail".
func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("Severity(%d)", int(s))
	}
	return severityNames[s]
}

// MarshalText encodes s as its String.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// A Finding is one check of one master, or of the whole set (Node -1).
type Finding struct {
	Node     int      `json:"node"`     // index in the nodes given to Check; -1 for the set
	Addr     string   `json:"addr"`     // the node's address, and the cluster primary's when it is one
	Check    string   `json:"check"`    // the check's name: reach, role, eviction, persistence, acl, rtt, clock, start, members, same-server
	Severity Severity `json:"severity"` // ok, warn or fail
	Got      string   `json:"got"`      // what the master is
	Want     string   `json:"want"`     // what it should be
	Why      string   `json:"why"`      // why it matters
}

// A Report is every Finding of one Check, by node, then the set's.
type Report struct {
	Findings  []Finding `json:"findings"`
	Nodes     int       `json:"nodes"`     // nodes given
	Reachable int       `json:"reachable"` // nodes whose every server answered
	Need      int       `json:"need"`      // a majority of Nodes
}

// Worst returns the worst severity among r's findings.
func (r Report) Worst() Severity {
	w := SeverityOK
	for _, f := range r.Findings {
		w = max(w, f.Severity)
	}
	return w
}

// Majority reports whether at least a majority of the nodes answered.
func (r Report) Majority() bool { return r.Reachable >= r.Need }

// Check runs every check on nodes, as New takes them (a ClusterClient or
// Ring member is checked on each of its primaries), with the options the
// Clients over them use: WithTTL, WithNodeTimeout, WithDriftFactor,
// WithRestartGuard and WithPrefix shape what is wanted; WithClockSample how
// long the clock is sampled. It changes nothing on the nodes, and takes
// about the clock sample plus a few round trips (members are checked at
// once; at most the clock sample plus checkBudget). An unreachable node is
// a failed finding, not an error; the error is ErrInvalid for bad options
// or nodes, or ctx's error if it ended before the checks did.
func Check(ctx context.Context, nodes []redis.UniversalClient, opts ...Option) (Report, error) {
	cfg, err := defaults().with(opts)
	if err != nil {
		return Report{}, err
	}
	if err := checkNodes(nodes); err != nil {
		return Report{}, err
	}
	if cfg.clockSample < 0 || cfg.clockSample > MaxDuration {
		return Report{}, invalid("clock sample %v must be in [0, %v]", cfg.clockSample, MaxDuration)
	}
	members := make([]memberCheck, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { members[i] = checkMember(ctx, &cfg, i, n) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("redlock: Check: %w", err)
	}
	r := Report{Nodes: len(nodes), Need: quorum.Majority(len(nodes))}
	for _, m := range members {
		r.Findings = append(r.Findings, m.findings...)
		if m.reachable {
			r.Reachable++
		}
	}
	r.Findings = append(r.Findings, setFindings(&cfg, members)...)
	// By node, the set's findings (-1) last.
	slices.SortStableFunc(r.Findings, func(a, b Finding) int { return cmp.Compare(uint(a.Node), uint(b.Node)) })
	return r, nil
}

// checkNodes refuses an empty or nil node list, as New does.
func checkNodes(nodes []redis.UniversalClient) error {
	if len(nodes) == 0 {
		return invalid("Check needs at least one node")
	}
	for i, n := range nodes {
		if n == nil {
			return invalid("node %d is nil", i)
		}
	}
	return nil
}

// A memberCheck is what the checks of one member found, and what the set
// checks need of it: its servers' run_ids and cluster node IDs.
type memberCheck struct {
	findings  []Finding
	reachable bool
	runIDs    []string
	youngFor  time.Duration // the longest wait of its servers under the guard; 0 if it counts now
}

// A server is one server process of a member: the member itself, or one
// primary of a cluster or shard of a ring.
type server struct {
	addr string
	rdb  *redis.Client
}

// checkBudget bounds the checks of one member beyond its clock sample, so
// that a frozen master costs Check a bounded wait even under a ctx without
// deadline (each of its calls is bounded by its client's timeouts too).
const checkBudget = 20 * time.Second

// checkMember runs the per-server checks on every server of member i.
func checkMember(ctx context.Context, cfg *config, i int, n redis.UniversalClient) memberCheck {
	ctx, cancel := context.WithTimeout(ctx, cfg.clockSample+checkBudget)
	defer cancel()
	m := memberCheck{reachable: true}
	servers, err := primariesOf(ctx, n)
	if err != nil {
		m.reachable = false
		m.findings = append(m.findings, Finding{Node: i, Addr: nodeAddr(n), Check: "reach", Severity: SeverityFail,
			Got: oneLine(err.Error()), Want: "answers", Why: "an unreachable master cannot grant; enough of them and no lock can be had"})
		return m
	}
	results := make([]serverCheck, len(servers))
	var wg sync.WaitGroup
	for k, s := range servers {
		wg.Go(func() { results[k] = checkServer(ctx, cfg, s) })
	}
	wg.Wait()
	for _, r := range results {
		for _, f := range r.findings {
			f.Node = i
			m.findings = append(m.findings, f)
		}
		m.reachable = m.reachable && r.reachable
		if r.runID != "" {
			m.runIDs = append(m.runIDs, r.runID)
		}
		m.youngFor = max(m.youngFor, r.youngFor)
	}
	return m
}

// primariesOf returns the server processes that grant for member n: itself,
// or every primary of a cluster (every shard of a ring).
func primariesOf(ctx context.Context, n redis.UniversalClient) ([]server, error) {
	var mu sync.Mutex
	var out []server
	add := func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, server{addr: nodeAddr(n) + " primary " + master.NormalAddr(c.Options().Addr), rdb: c})
		return nil
	}
	var err error
	switch r := n.(type) {
	case *redis.Client:
		return []server{{addr: nodeAddr(n), rdb: r}}, nil
	case *redis.ClusterClient:
		err = r.ForEachMaster(ctx, add)
	case *redis.Ring:
		err = r.ForEachShard(ctx, add)
	default:
		return nil, fmt.Errorf("a %T: Check reads *redis.Client, ClusterClient and Ring members only", n)
	}
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("no primary found")
	}
	slices.SortFunc(out, func(a, b server) int { return cmp.Compare(a.addr, b.addr) })
	return out, err
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// doctor renders redlock.Check: one line per finding, then a verdict. The
// checks themselves are the library's (redlock/check.go).

// doctorBudget bounds a whole doctor run beyond its clock sample.
const doctorBudget = 30 * time.Second

// doctorFlags are doctor's flags.
type doctorFlags struct {
	target
	json        bool
	ttl         time.Duration
	nodeTimeout time.Duration
	drift       float64
	guard       time.Duration
	sample      time.Duration
}

// A doctorVerdict is the end of doctor's report.
type doctorVerdict struct {
	Verdict  string `json:"verdict"` // ok, fail or unavailable
	Failed   int    `json:"failed"`
	Warnings int    `json:"warnings"`
	Text     string `json:"text"`
}

func (c *cli) doctor(args []string) int {
	fs := newFlagSet("doctor")
	var f doctorFlags
	f.target.register(fs, c.getenv, "")
	fs.BoolVar(&f.json, "json", false, "print one JSON document (findings and verdict) instead of lines")
	fs.DurationVar(&f.ttl, "ttl", redlock.DefaultTTL, "the locks' lease, as run's --ttl: the drift allowance and restart guard follow from it")
	fs.DurationVar(&f.nodeTimeout, "node-timeout", redlock.DefaultNodeTimeout, "the node timeout, as run's: the round trip must fit within it")
	fs.Float64Var(&f.drift, "drift-factor", redlock.DefaultDriftFactor, "the clock drift allowance as a share of the TTL: each master's clock rate must stay within it")
	fs.DurationVar(&f.guard, "restart-guard", 0, "the restart guard, as run's --restart-guard (0: the default guard)")
	fs.DurationVar(&f.sample, "clock-sample", redlock.DefaultClockSample, "how long to compare each master's clock with this host's (0: skip)")
	if code, ok := c.parse(fs, doctorUsage, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return c.usageError(fs, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	addrs, err := f.addrs()
	if err != nil {
		return c.usageError(fs, err)
	}
	ns, err := dial(addrs)
	if err != nil {
		return c.usageError(fs, err)
	}
	defer ns.close()
	members, closeMembers := ns.members(clusterProbe)
	defer closeMembers()
	ctx, cancel := context.WithTimeout(context.Background(), doctorBudget+max(f.sample, 0))
	defer cancel()
	rep, err := redlock.Check(ctx, members, f.options()...)
	if errors.Is(err, redlock.ErrInvalid) {
		return c.usageError(fs, errors.New(ns.redact(err.Error())))
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock doctor: %s\n", ns.redact(err.Error()))
		return exitInternal
	}
	return c.printDoctor(ns, &f, rep)
}

// options are the Check options the flags ask for.
func (f *doctorFlags) options() []redlock.Option {
	opts := []redlock.Option{redlock.WithTTL(f.ttl), redlock.WithNodeTimeout(f.nodeTimeout),
		redlock.WithDriftFactor(f.drift), redlock.WithPrefix(f.prefix), redlock.WithClockSample(f.sample)}
	if f.guard != 0 {
		opts = append(opts, redlock.WithRestartGuard(f.guard))
	}
	return opts
}

// printDoctor prints rep as lines or JSON and returns the exit status: 69
// when fewer than a majority answered, 1 when a check failed, else 0.
func (c *cli) printDoctor(ns *nodeSet, f *doctorFlags, rep redlock.Report) int {
	for i := range rep.Findings {
		fd := &rep.Findings[i]
		fd.Addr, fd.Got = ns.redact(fd.Addr), ns.redact(fd.Got)
	}
	v, code := verdictOf(rep)
	var err error
	if f.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			redlock.Report
			doctorVerdict
		}{rep, v})
	} else {
		err = printFindings(c.stdout, rep, v)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "quorumlock doctor: %v\n", err)
		return exitInternal
	}
	return code
}

// verdictOf sums rep up and returns doctor's exit status.
func verdictOf(rep redlock.Report) (doctorVerdict, int) {
	var v doctorVerdict
	for _, f := range rep.Findings {
		switch f.Severity {
		case redlock.SeverityFail:
			v.Failed++
		case redlock.SeverityWarn:
			v.Warnings++
		}
	}
	switch {
	case !rep.Majority():
		v.Verdict = "unavailable"
		v.Text = fmt.Sprintf("only %d of %d nodes answered, a majority is %d: no lock can be had", rep.Reachable, rep.Nodes, rep.Need)
		return v, exitUnavailable
	case v.Failed > 0:
		v.Verdict = "fail"
		v.Text = fmt.Sprintf("%d failed, %d warnings: these masters do not keep Redlock's guarantees; fix the failed checks", v.Failed, v.Warnings)
		return v, exitFailure
	}
	v.Verdict = "ok"
	v.Text = fmt.Sprintf("every guarantee holds (%d warnings)", v.Warnings)
	return v, exitOK
}

// printFindings writes one line per finding, then the verdict:
// "fail node 1 (addr) eviction: GOT; want WANT — WHY".
func printFindings(w io.Writer, rep redlock.Report, v doctorVerdict) error {
	var b strings.Builder
	for _, f := range rep.Findings {
		who := "all nodes"
		if f.Node >= 0 {
			who = fmt.Sprintf("node %d (%s)", f.Node, f.Addr)
		}
		fmt.Fprintf(&b, "%-4s %s %s: %s; want %s — %s\n", f.Severity, who, f.Check, f.Got, f.Want, f.Why)
	}
	fmt.Fprintf(&b, "verdict: %s: %s\n", v.Verdict, v.Text)
	_, err := io.WriteString(w, b.String())
	return err
}

var doctorUsage = `Usage: quorumlock doctor --nodes host:port,... [--ttl D] [--node-timeout D] [--drift-factor F] [--json]

Ask every master whether it is fit to hold locks, and print one line per
finding — severity, node (numbered as in lock errors), check, what it is,
what it should be and why it matters — then a verdict. Each node of a Redis
Cluster stands for its cluster: each of its primaries is checked.

Checks: reach; role (a replica fails; a master with replicas warns: a
promoted replica may lack a lease, and outside a cluster the restart guard
does not cover a failover); eviction (maxmemory-policy must be noeviction:
lock keys have TTLs, so volatile-* policies evict exactly them);
persistence (appendonly yes, appendfsync always; otherwise only the restart
guard keeps a restart safe); acl (ACL DRYRUN of every command the client
and its scripts use, for the current user); rtt (p99 of 50 PINGs against
--node-timeout); clock (TIME against this host's clock for --clock-sample:
the rate must stay within --drift-factor); start (vouched for, or up for
the restart guard; else how long its grants wait); same-server (one server
reached twice, by run_id); members (at least 3, an odd number).

Flags:
{{flags}}
Exit status:
  0   every guarantee holds (warnings may remain)
  1   a check failed: a lock may be granted to two holders, or never
  2   bad flags or arguments
  69  fewer than a majority of nodes answered
  125 quorumlock failed otherwise

Examples:
  quorumlock doctor --nodes 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379
  quorumlock doctor --json --clock-sample 10s
`

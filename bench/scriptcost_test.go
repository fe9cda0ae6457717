package bench

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// What the masters spend per script. INFO commandstats has one line per
// command name, so every script is "evalsha" there; to split by script,
// TestScriptCost drives the library's own operations one kind at a time on
// the five-node lab and, for each phase, reads
//
//   - INFO commandstats before and after (cmdstat_evalsha usec and calls:
//     the time the servers spent executing scripts, nested calls included,
//     not reading or writing sockets), and INFO cpu (all the servers' CPU);
//   - SLOWLOG with slowlog-log-slower-than 0, which records every command
//     with its execution time — the same µs commandstats adds up — and its
//     arguments: EVALSHA's first argument is the script's SHA1, its second
//     the number of keys (two per lock for a batched extend).
//
// Each phase runs twice: once with the slowlog off, for commandstats and the
// CPU (the slowlog's own bookkeeping costs CPU), once with it on, for the
// split by script. TestScriptLadder then prices each guarantee: one server,
// the library's scripts and stripped variants called back to back.

var (
	flagCostN        = flag.Int("cost.n", 2000, "TestScriptCost: cycles or locks per phase")
	flagCostLocks    = flag.Int("cost.locks", 10000, "TestScriptCost: locks held for the batched-renewal phase")
	flagLadderN      = flag.Int("ladder.n", 50000, "TestScriptLadder: calls per variant, over all rounds")
	flagLadderRounds = flag.Int("ladder.rounds", 10, "TestScriptLadder: rounds, the variants interleaved")
)

// libraryScripts returns the library's scripts by SHA1, read from
// ../redlock as the library embeds them: each script file headed by the
// paragraphs of prelude.lua it uses, directly or through another, in the
// prelude's order (redlock/prelude.go, preludeFor).
func libraryScripts(t testing.TB) (bySHA map[string]string, src map[string]string) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "redlock", name+".lua"))
		if err != nil {
			t.Fatalf("reading the library's scripts: %v", err)
		}
		return string(b)
	}
	prelude := read("prelude")
	src = map[string]string{}
	bySHA = map[string]string{}
	for _, name := range []string{"acquire", "racquire", "permit", "extend", "release", "rrelease", "fence", "leave", "lead", "leader"} {
		body := read(name)
		s := preludeFor(prelude, body) + body
		src[name] = s
		sum := sha1.Sum([]byte(s))
		bySHA[hex.EncodeToString(sum[:])] = name
	}
	return bySHA, src
}

// preludeFor returns the paragraphs of prelude that body uses, directly or
// through the paragraphs it uses, in the prelude's order: what
// redlock/prelude.go heads a script with.
func preludeFor(prelude, body string) string {
	declared := regexp.MustCompile(`(?m)^local (?:function (\w+)|([\w, ]+?)\s*(?:=|$))`)
	comment := regexp.MustCompile(`--.*`)
	type part struct {
		text  string
		names []string
	}
	var parts []part
	for _, para := range strings.SplitAfter(prelude, "\n\n") {
		p := part{text: para}
		for _, m := range declared.FindAllStringSubmatch(para, -1) {
			for _, n := range strings.Split(m[1]+m[2], ",") {
				if n = strings.TrimSpace(n); n != "" {
					p.names = append(p.names, n)
				}
			}
		}
		if len(p.names) > 0 {
			parts = append(parts, p)
		}
	}
	used := make([]bool, len(parts))
	code := []string{comment.ReplaceAllString(body, "")}
	for len(code) > 0 {
		c := code[len(code)-1]
		code = code[:len(code)-1]
		for i, p := range parts {
			if used[i] {
				continue
			}
			for _, n := range p.names {
				if regexp.MustCompile(`\b` + n + `\b`).MatchString(c) {
					used[i] = true
					code = append(code, comment.ReplaceAllString(p.text, ""))
					break
				}
			}
		}
	}
	var b strings.Builder
	for i, p := range parts {
		if used[i] {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// A costStat is what the servers report of one phase, summed over nodes.
type costStat struct {
	cpu         time.Duration
	scriptCalls int64
	scriptUsec  int64
}

func readCost(t testing.TB, ctx context.Context, nodes []redis.UniversalClient) costStat {
	t.Helper()
	var s costStat
	for _, n := range nodes {
		info, err := n.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			t.Fatalf("INFO: %v", err)
		}
		for line := range strings.Lines(info) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			switch k {
			case "used_cpu_sys", "used_cpu_user":
				sec, _ := strconv.ParseFloat(v, 64)
				s.cpu += time.Duration(sec * float64(time.Second))
			case "cmdstat_evalsha", "cmdstat_eval":
				for f := range strings.SplitSeq(v, ",") {
					fk, fv, _ := strings.Cut(f, "=")
					n, _ := strconv.ParseInt(fv, 10, 64)
					switch fk {
					case "calls":
						s.scriptCalls += n
					case "usec":
						s.scriptUsec += n
					}
				}
			}
		}
	}
	return s
}

// A scriptUse is one script's calls in one phase, from the slowlog.
type scriptUse struct {
	name  string
	durs  []int64 // µs per call
	keys  int64   // keys over all calls
	total int64
}

// slowlogSplit returns every script call the slowlogs hold, by script.
func slowlogSplit(t testing.TB, ctx context.Context, nodes []redis.UniversalClient, names map[string]string) []*scriptUse {
	t.Helper()
	by := map[string]*scriptUse{}
	for _, n := range nodes {
		entries, err := n.SlowLogGet(ctx, -1).Result()
		if err != nil {
			t.Fatalf("SLOWLOG GET: %v", err)
		}
		if len(entries) >= slowlogLen {
			t.Logf("slowlog full (%d entries): the split undercounts", len(entries))
		}
		for _, e := range entries {
			if len(e.Args) < 3 {
				continue
			}
			cmd := strings.ToLower(e.Args[0])
			if cmd != "evalsha" && cmd != "eval" {
				continue
			}
			name := names[e.Args[1]]
			if name == "" {
				name = "other " + cmd + " " + e.Args[1][:min(8, len(e.Args[1]))]
			}
			u := by[name]
			if u == nil {
				u = &scriptUse{name: name}
				by[name] = u
			}
			us := int64(e.Duration / time.Microsecond)
			u.durs = append(u.durs, us)
			u.total += us
			k, _ := strconv.ParseInt(e.Args[2], 10, 64)
			u.keys += k
		}
	}
	out := make([]*scriptUse, 0, len(by))
	for _, u := range by {
		slices.Sort(u.durs)
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *scriptUse) int { return cmp.Compare(b.total, a.total) })
	return out
}

const slowlogLen = 500000

func setSlowlog(t testing.TB, ctx context.Context, nodes []redis.UniversalClient, on bool) {
	t.Helper()
	threshold := "-1"
	if on {
		threshold = "0"
	}
	for _, n := range nodes {
		if err := n.ConfigSet(ctx, "slowlog-max-len", strconv.Itoa(slowlogLen)).Err(); err != nil {
			t.Fatalf("CONFIG SET: %v", err)
		}
		if err := n.ConfigSet(ctx, "slowlog-log-slower-than", threshold).Err(); err != nil {
			t.Fatalf("CONFIG SET: %v", err)
		}
		n.Do(ctx, "SLOWLOG", "RESET")
	}
}

// A costPhase is one kind of work: setup (not measured) then work, which
// returns how many units (cycles, locks, acquisitions…) it did.
type costPhase struct {
	name, unit string
	setup      func(ctx context.Context) any
	// work does the phase's work and calls read once, as soon as the work
	// to measure is done (before any unmeasured tail, such as unlocking).
	work    func(ctx context.Context, state any, read func()) int
	cleanup func(ctx context.Context, state any)
}

// TestScriptCost prints, per phase, the servers' script time per unit split
// by script, and their whole CPU per unit.
func TestScriptCost(t *testing.T) {
	lab := startLab(t)
	nodes := lab.Clients(t)
	names, _ := libraryScripts(t)
	ctx := context.Background()
	off := newQuorumlock(t, nodes, redlock.WithAutoRenew(false))
	def := newQuorumlock(t, nodes)
	renewed := newQuorumlock(t, nodes, redlock.WithTTL(3*time.Second))
	rs := newRedsync(nodes)
	f := floor{nodes}
	var seq int
	fresh := func(tag string) string { seq++; return fmt.Sprintf("cost:%s:%d", tag, seq) }
	n := *flagCostN

	sequential := func(name string, c cycle) costPhase {
		return costPhase{name: name, unit: "cycle", work: func(ctx context.Context, _ any, read func()) int {
			p := fresh("seq")
			done := 0
			for i := range n {
				if c(ctx, p+":"+strconv.Itoa(i)) == nil {
					done++
				}
			}
			read()
			return done
		}}
	}
	parallel := func(name string, c cycle) costPhase {
		return costPhase{name: name, unit: "cycle", work: func(ctx context.Context, _ any, read func()) int {
			p := fresh("par")
			var mu sync.Mutex
			done := 0
			var wg sync.WaitGroup
			for w := range distinctWorkers {
				wg.Go(func() {
					for i := w; i < n; i += distinctWorkers {
						if c(ctx, p+":"+strconv.Itoa(i)) == nil {
							mu.Lock()
							done++
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			read()
			return done
		}}
	}
	qlCycle := func(ctx context.Context, key string) error {
		l, err := off.TryLock(ctx, key)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	held := func(c *redlock.Client, count int) func(ctx context.Context) any {
		return func(ctx context.Context) any {
			p := fresh("held")
			locks := make([]*redlock.Lock, count)
			var wg sync.WaitGroup
			for w := range distinctWorkers {
				wg.Go(func() {
					for i := w; i < count; i += distinctWorkers {
						// A node timeout on a loaded machine fails a few
						// attempts: retry, then leave the slot empty.
						for range 5 {
							l, err := c.TryLock(ctx, p+":"+strconv.Itoa(i))
							if err == nil {
								locks[i] = l
								break
							}
						}
					}
				})
			}
			wg.Wait()
			time.Sleep(200 * time.Millisecond) // late replies and undos land
			return locks
		}
	}
	unlockAll := func(ctx context.Context, state any) {
		for _, l := range state.([]*redlock.Lock) {
			if l != nil {
				l.Unlock(ctx)
			}
		}
	}

	phases := []costPhase{
		sequential("floor: SET NX + DEL, 1 worker", func(ctx context.Context, key string) error {
			if err := f.lock(ctx, key); err != nil {
				return err
			}
			return f.unlock(ctx, key)
		}),
		sequential("redsync: TryLock + Unlock, 1 worker", func(ctx context.Context, key string) error {
			m := rs.NewMutex(key)
			if err := m.TryLockContext(ctx); err != nil {
				return err
			}
			_, err := m.UnlockContext(ctx)
			return err
		}),
		sequential("quorumlock: TryLock + Unlock, 1 worker", qlCycle),
		parallel("quorumlock: TryLock + Unlock, 16 workers", qlCycle),
		{name: "quorumlock: TryLock alone (held)", unit: "lock",
			work: func(ctx context.Context, _ any, read func()) int {
				p := fresh("acq")
				locks := make([]*redlock.Lock, 0, n)
				for i := range n {
					if l, err := off.TryLock(ctx, p+":"+strconv.Itoa(i)); err == nil {
						locks = append(locks, l)
					}
				}
				time.Sleep(200 * time.Millisecond) // late replies and undos land
				read()
				for _, l := range locks {
					l.Unlock(ctx)
				}
				return len(locks)
			}},
		{name: "quorumlock: Unlock alone", unit: "lock", setup: held(off, n),
			work: func(ctx context.Context, state any, read func()) int {
				done := 0
				for _, l := range state.([]*redlock.Lock) {
					if l != nil && l.Unlock(ctx) == nil {
						done++
					}
				}
				read()
				return done
			}},
		{name: "quorumlock: Extend, one lock per call", unit: "lock", setup: held(off, n), cleanup: unlockAll,
			work: func(ctx context.Context, state any, read func()) int {
				done := 0
				for _, l := range state.([]*redlock.Lock) {
					if l != nil && l.Extend(ctx) == nil {
						done++
					}
				}
				read()
				return done
			}},
		{name: fmt.Sprintf("quorumlock: watchdog, %d locks, TTL 3s, 3 s", *flagCostLocks), unit: "lock·period",
			setup: held(renewed, *flagCostLocks), cleanup: unlockAll,
			work: func(ctx context.Context, state any, read func()) int {
				time.Sleep(3 * time.Second) // 3 renewal periods of 1 s
				live := 0
				for _, l := range state.([]*redlock.Lock) {
					if l != nil && l.Err() == nil {
						live++
					}
				}
				read()
				return live * 3
			}},
		{name: "quorumlock: Lock, 8 workers on one key, hold 2ms, 3 s", unit: "acquisition",
			work: func(ctx context.Context, _ any, read func()) int {
				key := fresh("one")
				end := time.Now().Add(3 * time.Second)
				var mu sync.Mutex
				done := 0
				var wg sync.WaitGroup
				for range oneKeyWorkers {
					wg.Go(func() {
						for time.Now().Before(end) {
							wctx, cancel := context.WithDeadline(ctx, end)
							l, err := def.Lock(wctx, key)
							cancel()
							if err != nil {
								continue
							}
							time.Sleep(2 * time.Millisecond)
							l.Unlock(ctx)
							mu.Lock()
							done++
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				time.Sleep(200 * time.Millisecond)
				read()
				return done
			}},
	}

	report := &strings.Builder{}
	fmt.Fprintf(report, "\nscript cost: %d masters, redis-server on loopback; load average %s\n", len(nodes), loadavg())
	fmt.Fprintln(report, "per unit, five servers together: script execution (commandstats evalsha usec) and all server CPU (INFO cpu);")
	fmt.Fprintln(report, "by script from the slowlog (threshold 0): calls per unit, µs per call mean / p50 / p99, keys per call, µs per unit")
	for _, ph := range phases {
		var res [2]struct {
			units int
			st    costStat
			split []*scriptUse
		}
		for pass := range 2 {
			setSlowlog(t, ctx, nodes, pass == 1)
			var state any
			if ph.setup != nil {
				state = ph.setup(ctx)
			}
			for _, n := range nodes {
				n.Do(ctx, "SLOWLOG", "RESET")
			}
			s0 := readCost(t, ctx, nodes)
			units := ph.work(ctx, state, func() {
				res[pass].st = readCost(t, ctx, nodes).minus(s0)
				if pass == 1 {
					res[pass].split = slowlogSplit(t, ctx, nodes, names)
				}
			})
			res[pass].units = units
			setSlowlog(t, ctx, nodes, false)
			if ph.cleanup != nil {
				ph.cleanup(ctx, state)
			}
		}
		a, b := res[0], res[1]
		if a.units == 0 || b.units == 0 {
			fmt.Fprintf(report, "\n%s: no unit completed\n", ph.name)
			continue
		}
		per := func(d float64, u int) float64 { return d / float64(u) }
		fmt.Fprintf(report, "\n%s — %d %ss (slowlog pass: %d)\n", ph.name, a.units, ph.unit, b.units)
		fmt.Fprintf(report, "  scripts: %.2f calls, %.1f µs per %s (commandstats, slowlog off; slowlog pass %.1f µs); all server CPU %.0f µs per %s (slowlog pass %.0f)\n",
			per(float64(a.st.scriptCalls), a.units), per(float64(a.st.scriptUsec), a.units), ph.unit,
			per(float64(b.st.scriptUsec), b.units), per(float64(a.st.cpu.Microseconds()), a.units), ph.unit,
			per(float64(b.st.cpu.Microseconds()), b.units))
		for _, u := range b.split {
			c := len(u.durs)
			fmt.Fprintf(report, "    %-22s %7.2f calls  %6.1f / %3d / %3d µs per call  %6.1f keys/call  %7.2f µs per %s\n",
				u.name, per(float64(c), b.units), float64(u.total)/float64(c), u.durs[c/2], u.durs[min(c-1, c*99/100)],
				float64(u.keys)/float64(c), per(float64(u.total), b.units), ph.unit)
		}
	}
	t.Log(report.String())
	fmt.Print(report.String())
}

func (s costStat) minus(o costStat) costStat {
	return costStat{cpu: s.cpu - o.cpu, scriptCalls: s.scriptCalls - o.scriptCalls, scriptUsec: s.scriptUsec - o.scriptUsec}
}

// A variant is one script (or plain command) priced by TestScriptLadder:
// prepare sets up the state each call expects (not measured); call sends
// call i into a pipeline.
type variant struct {
	name    string
	stat    string // the commandstats line to read: evalsha, set, del
	prepare func(ctx context.Context, c redis.UniversalClient, keys []string)
	call    func(p redis.Pipeliner, i int, keys []string)
}

// TestScriptLadder prices the guarantees on one server: the library's
// scripts as they are, plain commands, and stripped variants that add one
// guarantee at a time, each called -ladder.n times back to back (pipelines
// of 50, fresh keys), its µs per call read from INFO commandstats after a
// CONFIG RESETSTAT. Then the memory a key's retained fencing state holds
// after its lock is released.
func TestScriptLadder(t *testing.T) {
	lab := startLab(t)
	node := lab.Clients(t)[0]
	ctx := context.Background()
	_, lib := libraryScripts(t)
	saved, err := node.LastSave(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	lastsave := strconv.FormatInt(saved, 10)
	const ttl, retention, queueLease = "10000", "86400000", "30000"
	sha := map[string]string{}
	load := func(src string) string {
		if s, ok := sha[src]; ok {
			return s
		}
		s, err := node.ScriptLoad(ctx, src).Result()
		if err != nil {
			t.Fatalf("SCRIPT LOAD: %v", err)
		}
		sha[src] = s
		return s
	}
	// The lock's keys as the library names them: release.lua's four, and
	// acquire.lua's five (the readers too).
	lockKeys := func(k string) []string {
		ks := redlock.Keys(redlock.DefaultPrefix, k)
		return []string{ks.Lock, ks.Fence, ks.Queue, ks.Leases}
	}
	acquireKeys := func(k string) []string {
		return append(lockKeys(k), redlock.Keys(redlock.DefaultPrefix, k).Readers)
	}
	fenceKey := func(k string) []string { return []string{redlock.Keys(redlock.DefaultPrefix, k).Fence} }
	evalsha := func(src string, keysOf func(k string) []string, args func(i int) []any) func(redis.Pipeliner, int, []string) {
		s := load(src)
		return func(p redis.Pipeliner, i int, keys []string) {
			p.EvalSha(ctx, s, keysOf(keys[i]), args(i)...)
		}
	}
	acquireArgs := func(restart string) func(int) []any {
		return func(int) []any { return []any{"owner", "h1", ttl, "", queueLease, retention, restart} }
	}
	// Stripped acquires: each row adds one guarantee to the one above.
	const (
		luaSetNX = `return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[3])`
		hashLock = `local owner = redis.call('HGET', KEYS[1], 'owner')
if owner then return {0, redis.call('PTTL', KEYS[1])} end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'h:' .. ARGV[2], 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
`
		queueCheck = `local queued = redis.call('EXISTS', KEYS[3]) == 1
`
		incr     = `return {1, redis.call('INCR', KEYS[2])}`
		retained = `local token = tonumber(redis.call('GET', KEYS[2]) or '0') + 1
redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[6])
return {1, token}`
		clockTokn = `local t = redis.call('TIME')
local token = math.max(tonumber(redis.call('GET', KEYS[2]) or '0') + 1, tonumber(t[1]) * 1000000 + tonumber(t[2]))
redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[6])
return {1, token}`
		casDel  = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
		hashDel = `if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`
		hashDelQ = `local queued = redis.call('EXISTS', KEYS[3]) == 1
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`
	)
	// held: every key locked by the library's acquire (token = clock µs).
	tokens := map[string]int64{}
	var tokMu sync.Mutex
	held := func(ctx context.Context, c redis.UniversalClient, keys []string) {
		s := load(lib["acquire"])
		for lo := 0; lo < len(keys); lo += 50 {
			cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys[lo:min(lo+50, len(keys))] {
					p.EvalSha(ctx, s, acquireKeys(k), acquireArgs("")(0)...)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("prepare: %v", err)
			}
			for j, cmd := range cmds {
				v, _ := cmd.(*redis.Cmd).Int64Slice()
				if len(v) < 2 || v[0] != 1 {
					t.Fatalf("prepare: acquire refused: %v", v)
				}
				tokMu.Lock()
				tokens[keys[lo+j]] = v[1]
				tokMu.Unlock()
			}
		}
	}
	strings_ := func(ctx context.Context, c redis.UniversalClient, keys []string) {
		for lo := 0; lo < len(keys); lo += 50 {
			c.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys[lo:min(lo+50, len(keys))] {
					p.Set(ctx, k, "owner", 10*time.Second)
				}
				return nil
			})
		}
	}
	releaseArgs := func(token func(k string) int64) func(redis.Pipeliner, int, []string) {
		s := load(lib["release"])
		return func(p redis.Pipeliner, i int, keys []string) {
			k := keys[i]
			p.EvalSha(ctx, s, lockKeys(k), "owner", "h1", "1", "ch", retention, token(k), k+":free")
		}
	}
	batch := func(per int) func(redis.Pipeliner, int, []string) {
		s := load(lib["extend"])
		return func(p redis.Pipeliner, i int, keys []string) {
			var ks []string
			args := []any{"1", retention, lastsave}
			for _, k := range keys[i*per : (i+1)*per] {
				names := redlock.Keys(redlock.DefaultPrefix, k)
				ks = append(ks, names.Lock, names.Fence, names.Readers)
				args = append(args, "w", "owner", "h1", ttl, tokens[k])
			}
			p.EvalSha(ctx, s, ks, args...)
		}
	}
	variants := []variant{
		{name: "acquire: plain SET NX PX (the floor)", stat: "set",
			call: func(p redis.Pipeliner, i int, keys []string) { p.SetNX(ctx, keys[i], "owner", 10*time.Second) }},
		{name: "acquire: Lua SET NX PX", stat: "evalsha",
			call: evalsha(luaSetNX, func(k string) []string { return []string{k} }, func(int) []any { return []any{"owner", "h1", ttl} })},
		{name: "acquire: Lua reentrant hash lock (HGET, HSET, PEXPIRE)", stat: "evalsha",
			call: evalsha(hashLock+"return {1, 0}", lockKeys, acquireArgs(""))},
		{name: "  + queue check (EXISTS)", stat: "evalsha",
			call: evalsha(queueCheck+hashLock+"return {1, 0}", lockKeys, acquireArgs(""))},
		{name: "  + fencing counter, kept forever (INCR)", stat: "evalsha",
			call: evalsha(queueCheck+hashLock+incr, lockKeys, acquireArgs(""))},
		{name: "  + retention instead (GET, SET PX)", stat: "evalsha",
			call: evalsha(queueCheck+hashLock+retained, lockKeys, acquireArgs(""))},
		{name: "  + clock-derived token (TIME, max)", stat: "evalsha",
			call: evalsha(queueCheck+hashLock+clockTokn, lockKeys, acquireArgs(""))},
		{name: "library acquire.lua, restart detection off", stat: "evalsha",
			call: evalsha(lib["acquire"], acquireKeys, acquireArgs(""))},
		{name: "library acquire.lua, restart detection on (LASTSAVE)", stat: "evalsha",
			call: evalsha(lib["acquire"], acquireKeys, acquireArgs(lastsave))},
		{name: "library acquire.lua, first grant to a fresh client (INFO)", stat: "evalsha",
			call: evalsha(lib["acquire"], acquireKeys, acquireArgs("?"))},
		{name: "release: plain DEL (the floor)", stat: "del", prepare: strings_,
			call: func(p redis.Pipeliner, i int, keys []string) { p.Del(ctx, keys[i]) }},
		{name: "release: Lua GET compare DEL (redsync's)", stat: "evalsha", prepare: strings_,
			call: evalsha(casDel, func(k string) []string { return []string{k} }, func(int) []any { return []any{"owner"} })},
		{name: "release: Lua HGET compare DEL", stat: "evalsha", prepare: held,
			call: evalsha(hashDel, lockKeys, func(int) []any { return []any{"owner"} })},
		{name: "  + queue check (EXISTS)", stat: "evalsha", prepare: held,
			call: evalsha(hashDelQ, lockKeys, func(int) []any { return []any{"owner"} })},
		{name: "library release.lua, counter known fenced (token 0)", stat: "evalsha", prepare: held,
			call: releaseArgs(func(string) int64 { return 0 })},
		{name: "library release.lua, counter checked (GET)", stat: "evalsha", prepare: held,
			call: releaseArgs(func(k string) int64 { return tokens[k] })},
		{name: "library release.lua, counter raised (GET, SET PX)", stat: "evalsha", prepare: held,
			call: releaseArgs(func(k string) int64 { return tokens[k] + 1000 })},
		{name: "library fence.lua, raise (GET, SET PX)", stat: "evalsha", prepare: held,
			call: evalsha(lib["fence"], fenceKey, func(int) []any { return []any{time.Now().UnixMicro() + 1e9, retention} })},
		{name: "library fence.lua, already there (GET)", stat: "evalsha", prepare: held,
			call: evalsha(lib["fence"], fenceKey, func(int) []any { return []any{1, retention} })},
		{name: "library extend.lua, 1 lock per call", stat: "evalsha", prepare: held, call: batch(1)},
	}
	variants = append(variants, variant{name: "library extend.lua, 100 locks per call", stat: "evalsha", prepare: held, call: batch(100)})
	n := *flagLadderN
	rounds := max(1, *flagLadderRounds)
	report := &strings.Builder{}
	fmt.Fprintf(report, "\nscript ladder: one redis-server; each row %d calls per round (pipelines of 50, fresh keys), %d rounds, rows interleaved in rotating order;\n", n/rounds, rounds)
	fmt.Fprintf(report, "µs per call from INFO commandstats (after CONFIG RESETSTAT): median of the rounds [min–max]; load average %s\n", loadavg())
	// row measures v once and returns its µs per call.
	row := func(v variant, calls, perCall int) float64 {
		keys := make([]string, calls*perCall)
		p := ladderPrefix()
		for i := range keys {
			keys[i] = p + strconv.Itoa(i)
		}
		if v.prepare != nil {
			v.prepare(ctx, node, keys)
		}
		if err := node.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for lo := 0; lo < calls; lo += 50 {
			node.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i := lo; i < min(lo+50, calls); i++ {
					v.call(p, i, keys)
				}
				return nil
			})
		}
		got, usec := commandStat(t, ctx, node, v.stat)
		if got != int64(calls) {
			t.Errorf("%s: %d calls counted, want %d", v.name, got, calls)
		}
		return float64(usec) / float64(max(got, 1))
	}
	per := make([][]float64, len(variants))
	for r := range rounds {
		for k := range variants {
			i := (k + r) % len(variants)
			v := variants[i]
			calls, perCall := n/rounds, 1
			switch {
			case strings.Contains(v.name, "fresh client"):
				calls = max(1, n/rounds/10)
			case strings.Contains(v.name, "100 locks"):
				calls, perCall = max(1, n/rounds/100), 100
			}
			per[i] = append(per[i], row(v, calls, perCall)/float64(perCall))
		}
	}
	for i, v := range variants {
		slices.Sort(per[i])
		unit := "call"
		if strings.Contains(v.name, "100 locks") {
			unit = "lock"
		}
		fmt.Fprintf(report, "  %-62s %6.2f µs per %s [%.2f–%.2f]\n", v.name, per[i][len(per[i])/2], unit, per[i][0], per[i][len(per[i])-1])
	}

	// Retention: what a released key leaves behind for the retention.
	node.FlushAll(ctx)
	mem := func() int64 {
		info, _ := node.Info(ctx, "memory").Result()
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "order:" + strconv.Itoa(i)
	}
	m0 := mem()
	held(ctx, node, keys)
	m1 := mem()
	rel := load(lib["release"])
	for lo := 0; lo < n; lo += 50 {
		node.Pipelined(ctx, func(pp redis.Pipeliner) error {
			for _, k := range keys[lo:min(lo+50, n)] {
				pp.EvalSha(ctx, rel, lockKeys(k), "owner", "h1", "1", "ch", retention, 0)
			}
			return nil
		})
	}
	m2 := mem()
	left, _ := node.DBSize(ctx).Result()
	fmt.Fprintf(report, "  memory: %d keys locked: +%d bytes per held lock (lock hash + fencing counter); released: %d keys left (fencing counters with a TTL), %d bytes per released key, kept for the retention\n",
		n, (m1-m0)/int64(n), left, (m2-m0)/int64(n))
	t.Log(report.String())
	fmt.Print(report.String())
}

var ladderSeq int

func ladderPrefix() string { ladderSeq++; return fmt.Sprintf("ladder:%d:", ladderSeq) }

// commandStat returns the calls and usec of one INFO commandstats line.
func commandStat(t testing.TB, ctx context.Context, c redis.UniversalClient, cmd string) (calls, usec int64) {
	t.Helper()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(v, ",") {
			fk, fv, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(fv, 10, 64)
			switch fk {
			case "calls":
				calls = n
			case "usec":
				usec = n
			}
		}
	}
	return calls, usec
}

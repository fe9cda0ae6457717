package redislab

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// ScriptStat is what one server reports of the scripts it ran (EVALSHA and
// EVAL, from INFO commandstats): how many, and their server time in total.
type ScriptStat struct {
	Calls int64
	Time  time.Duration
}

// ScriptStats returns, per member and shard, the script calls and server
// time of the shard's current primary so far, failing t on error: the
// per-shard command counts and server µs per lock of a benchmark row.
// Take it before and after the work and subtract (Sub).
func (s *Sharded) ScriptStats(t testing.TB) [][]ScriptStat {
	t.Helper()
	out := make([][]ScriptStat, len(s.Members))
	for i, m := range s.Members {
		out[i] = make([]ScriptStat, len(m.Shards))
		for j, sh := range m.Shards {
			ctx, cancel := withTimeout()
			info, err := sh.Primary().text(ctx, "INFO", "commandstats")
			cancel()
			if err != nil {
				t.Fatalf("redislab: member %d shard %d: %v", i, j, err)
			}
			out[i][j] = scriptStat(info)
		}
	}
	return out
}

// Sub returns s less an earlier reading.
func (s ScriptStat) Sub(before ScriptStat) ScriptStat {
	return ScriptStat{Calls: s.Calls - before.Calls, Time: s.Time - before.Time}
}

// scriptStat sums the EVALSHA and EVAL lines of INFO commandstats, such as
// "cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,...".
func scriptStat(info string) ScriptStat {
	var st ScriptStat
	for line := range strings.Lines(info) {
		for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd)
			if !ok {
				continue
			}
			for _, f := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(f, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					st.Calls += n
				case "usec":
					st.Time += time.Duration(n) * time.Microsecond
				}
			}
		}
	}
	return st
}

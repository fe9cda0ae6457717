package chaos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
)

const ms = time.Millisecond

// hold builds a hand-made hold of key "k" over [start, end) milliseconds.
func hold(client string, token int64, start, end int) chaos.Hold {
	return chaos.Hold{Client: client, Key: "k", Token: token,
		Start: time.Duration(start) * ms, End: time.Duration(end) * ms, Until: time.Duration(end+10) * ms}
}

func TestCheckHandMadeHistories(t *testing.T) {
	lost := hold("b", 2, 20, 30)
	lost.Lost, lost.LossAt, lost.Until = true, 30*ms, 34*ms
	other := hold("c", 1, 5, 15)
	other.Key = "other"
	tests := []struct {
		name                  string
		history               []chaos.Hold
		overlaps, regressions int
		losses, unsignalled   int
		worstMargin           time.Duration
		firstOverlapBy        time.Duration
	}{
		{name: "empty", history: nil},
		{name: "clean handoffs", history: []chaos.Hold{hold("a", 1, 0, 10), hold("b", 2, 10, 20), hold("a", 5, 21, 30)}},
		{name: "recorded out of order", history: []chaos.Hold{hold("a", 5, 21, 30), hold("a", 1, 0, 10), hold("b", 2, 10, 20)}},
		{name: "other keys may overlap", history: []chaos.Hold{hold("a", 1, 0, 10), other}},
		{name: "overlap", history: []chaos.Hold{hold("a", 1, 0, 10), hold("b", 2, 8, 20)}, overlaps: 1, firstOverlapBy: 2 * ms},
		{name: "nested overlap", history: []chaos.Hold{hold("a", 1, 0, 50), hold("b", 2, 10, 20), hold("c", 3, 30, 40)},
			overlaps: 2, firstOverlapBy: 10 * ms},
		{name: "token regression", history: []chaos.Hold{hold("a", 7, 0, 10), hold("b", 3, 11, 20)}, regressions: 1},
		{name: "equal tokens", history: []chaos.Hold{hold("a", 4, 0, 10), hold("b", 4, 11, 20)}, regressions: 1},
		{name: "overlap and regression", history: []chaos.Hold{hold("a", 2, 0, 10), hold("b", 1, 5, 20)},
			overlaps: 1, regressions: 1, firstOverlapBy: 5 * ms},
		{name: "loss signalled", history: []chaos.Hold{hold("a", 1, 0, 10), lost}, losses: 1, worstMargin: 4 * ms},
		{name: "unsignalled loss", history: []chaos.Hold{func() chaos.Hold { h := hold("a", 1, 0, 10); h.Unsignalled = true; return h }()},
			unsignalled: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := chaos.Check(tt.history)
			if rep.Acquisitions != len(tt.history) {
				t.Errorf("Acquisitions = %d, want %d", rep.Acquisitions, len(tt.history))
			}
			if got := len(rep.Overlaps); got != tt.overlaps {
				t.Errorf("overlaps = %d, want %d\n%s", got, tt.overlaps, &rep)
			}
			if got := len(rep.Regressions); got != tt.regressions {
				t.Errorf("regressions = %d, want %d\n%s", got, tt.regressions, &rep)
			}
			if rep.Losses != tt.losses || len(rep.Unsignalled) != tt.unsignalled {
				t.Errorf("losses, unsignalled = %d, %d, want %d, %d", rep.Losses, len(rep.Unsignalled), tt.losses, tt.unsignalled)
			}
			if tt.losses > 0 && rep.WorstMargin != tt.worstMargin {
				t.Errorf("WorstMargin = %v, want %v", rep.WorstMargin, tt.worstMargin)
			}
			if tt.overlaps > 0 && rep.Overlaps[0].By != tt.firstOverlapBy {
				t.Errorf("first overlap by %v, want %v", rep.Overlaps[0].By, tt.firstOverlapBy)
			}
			if got, want := rep.Safe(), tt.overlaps == 0 && tt.regressions == 0; got != want {
				t.Errorf("Safe() = %v, want %v", got, want)
			}
		})
	}
}

func TestCheckWorstMarginIsTheSmallest(t *testing.T) {
	var history []chaos.Hold
	for i, margin := range []int{9, -3, 5} {
		h := hold("a", int64(i+1), i*100, i*100+50)
		h.Lost, h.LossAt, h.Until = true, h.End, h.End+time.Duration(margin)*ms
		history = append(history, h)
	}
	rep := chaos.Check(history)
	if rep.Losses != 3 || rep.Late != 1 || rep.WorstMargin != -3*ms {
		t.Fatalf("losses %d (late %d), worst margin %v; want 3 (late 1), -3ms", rep.Losses, rep.Late, rep.WorstMargin)
	}
}

func TestReportString(t *testing.T) {
	rep := chaos.Check([]chaos.Hold{hold("a", 2, 0, 10), hold("b", 1, 5, 20)})
	s := rep.String()
	for _, want := range []string{"acquisitions=2", "overlaps=1", "token-regressions=1", "worst-loss-margin=n/a", "a:k#2[0s,10ms)"} {
		if !strings.Contains(s, want) {
			t.Errorf("report %q lacks %q", s, want)
		}
	}
}

func TestFencedStoreRejectsOlderTokens(t *testing.T) {
	var s chaos.FencedStore
	steps := []struct {
		key   string
		token int64
		want  bool
	}{
		{"k", 3, true}, {"k", 3, true}, {"k", 5, true}, {"k", 4, false}, {"other", 1, true}, {"k", 6, true}, {"k", 5, false},
	}
	for i, st := range steps {
		if got := s.Write(st.key, st.token); got != st.want {
			t.Errorf("step %d: Write(%q, %d) = %v, want %v", i, st.key, st.token, got, st.want)
		}
	}
	if acc, rej := s.Counts(); acc != 5 || rej != 2 {
		t.Errorf("Counts() = %d, %d, want 5, 2", acc, rej)
	}
}

func TestCheckReadersSemaphoresAndManyKeys(t *testing.T) {
	read := func(client string, token int64, start, end int) chaos.Hold {
		h := hold(client, token, start, end)
		h.Shared = true
		return h
	}
	permit := func(client string, p int, token int64, start, end int) chaos.Hold {
		h := hold(client, token, start, end)
		h.Key, h.Name = "s#"+string(rune('0'+p)), "s"
		return h
	}
	for _, tc := range []struct {
		name                     string
		history                  []chaos.Hold
		overlaps, regressions, n int // n: MostAtOnce["s"]
	}{
		{"readers together", []chaos.Hold{hold("w", 5, 0, 10), read("a", 5, 10, 30), read("b", 5, 15, 25), hold("w", 6, 30, 40)}, 0, 0, 0},
		{"a writer among readers", []chaos.Hold{read("a", 5, 0, 30), hold("w", 6, 10, 20)}, 1, 0, 0},
		{"a reader below the last writer", []chaos.Hold{hold("w", 6, 0, 10), read("a", 5, 10, 20)}, 0, 1, 0},
		{"a writer not above a reader's token", []chaos.Hold{read("a", 6, 0, 10), hold("w", 6, 10, 20)}, 0, 1, 0},
		{"permits side by side", []chaos.Hold{permit("a", 0, 1, 0, 10), permit("b", 1, 1, 5, 15), permit("c", 2, 1, 8, 20), permit("d", 0, 2, 10, 20)}, 0, 0, 3},
		{"one permit twice", []chaos.Hold{permit("a", 0, 1, 0, 10), permit("b", 0, 2, 5, 15)}, 1, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := chaos.Check(tc.history)
			if len(rep.Overlaps) != tc.overlaps || len(rep.Regressions) != tc.regressions || rep.MostAtOnce["s"] != tc.n {
				t.Errorf("overlaps %d regressions %d most at once %d; want %d, %d, %d\n%s",
					len(rep.Overlaps), len(rep.Regressions), rep.MostAtOnce["s"], tc.overlaps, tc.regressions, tc.n, rep.String())
			}
		})
	}
}

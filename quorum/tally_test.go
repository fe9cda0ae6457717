package quorum_test

import (
	"testing"

	"github.com/seed818c56a1/quorumlock/quorum"
)

func TestMajority(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		if got := quorum.Majority(n); got != want {
			t.Errorf("Majority(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	cases := []struct {
		o    quorum.Outcome
		want string
	}{
		{quorum.Pending, "pending"},
		{quorum.Granted, "granted"},
		{quorum.Refused, "refused"},
		{quorum.Failed, "failed"},
		{quorum.Outcome(9), "Outcome(9)"},
		{quorum.Outcome(-1), "Outcome(-1)"},
	}
	for _, c := range cases {
		if got := c.o.String(); got != c.want {
			t.Errorf("Outcome(%d).String() = %q, want %q", int8(c.o), got, c.want)
		}
	}
}

// tally builds a tally from one letter per node: G, R, F, or . for pending.
func tally(votes string, need int) quorum.Tally[int] {
	outcome := map[rune]quorum.Outcome{'.': quorum.Pending, 'G': quorum.Granted, 'R': quorum.Refused, 'F': quorum.Failed}
	t := quorum.Tally[int]{Need: need}
	for _, c := range votes {
		t.Votes = append(t.Votes, quorum.Vote[int]{Outcome: outcome[c]})
	}
	return t
}

func TestTally(t *testing.T) {
	cases := []struct {
		votes              string
		need               int
		granted, refused   int
		failed, pending    int
		won, lost, settled bool
		want               string
	}{
		{"", 0, 0, 0, 0, 0, true, false, true, "0 of 0 granted, need 0"},
		{".....", 3, 0, 0, 0, 5, false, false, false, "0 of 5 granted, 5 pending, need 3"},
		{"GG.RF", 3, 2, 1, 1, 1, false, false, false, "2 of 5 granted, 1 refused, 1 failed, 1 pending, need 3"},
		{"GGG..", 3, 3, 0, 0, 2, true, false, true, "3 of 5 granted, 2 pending, need 3"},
		{"GGGRR", 3, 3, 2, 0, 0, true, false, true, "3 of 5 granted, 2 refused, need 3"},
		{"GGRFF", 3, 2, 1, 2, 0, false, true, true, "2 of 5 granted, 1 refused, 2 failed, need 3"},
		{"G.RRR", 3, 1, 3, 0, 1, false, true, true, "1 of 5 granted, 3 refused, 1 pending, need 3"},
		{"FFF..", 3, 0, 0, 3, 2, false, true, true, "0 of 5 granted, 3 failed, 2 pending, need 3"},
		{"G.FFF", 3, 1, 0, 3, 1, false, true, true, "1 of 5 granted, 3 failed, 1 pending, need 3"},
		{"G..RR", 3, 1, 2, 0, 2, false, false, false, "1 of 5 granted, 2 refused, 2 pending, need 3"},
		{"G....", 1, 1, 0, 0, 4, true, false, true, "1 of 5 granted, 4 pending, need 1"},
		{"GGGGG", 6, 5, 0, 0, 0, false, true, true, "5 of 5 granted, need 6"},
		{"GGGGR", 5, 4, 1, 0, 0, false, true, true, "4 of 5 granted, 1 refused, need 5"},
		{"R", 1, 0, 1, 0, 0, false, true, true, "0 of 1 granted, 1 refused, need 1"},
	}
	for _, c := range cases {
		tl := tally(c.votes, c.need)
		counts := [4]int{tl.Count(quorum.Granted), tl.Count(quorum.Refused), tl.Count(quorum.Failed), tl.Count(quorum.Pending)}
		if want := [4]int{c.granted, c.refused, c.failed, c.pending}; counts != want {
			t.Errorf("%q need %d: granted, refused, failed, pending = %v, want %v", c.votes, c.need, counts, want)
		}
		if tl.Won() != c.won || tl.Lost() != c.lost || tl.Settled() != c.settled {
			t.Errorf("%q need %d: Won, Lost, Settled = %t, %t, %t, want %t, %t, %t",
				c.votes, c.need, tl.Won(), tl.Lost(), tl.Settled(), c.won, c.lost, c.settled)
		}
		if got := tl.String(); got != c.want {
			t.Errorf("%q need %d: String() = %q, want %q", c.votes, c.need, got, c.want)
		}
	}
}

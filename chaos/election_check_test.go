package chaos_test

import (
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// leadership builds a hand-made leadership of "k" over [start, end) ms.
func leadership(value string, term int64, start, end int) chaos.Hold {
	h := hold(value, term, start, end)
	h.Value = value
	return h
}

func told(value string, term int64, at int) chaos.Sighting {
	d := time.Duration(at) * ms
	return chaos.Sighting{Asked: d, At: d, Leader: redlock.Leader{Value: value, Term: term}}
}

func TestCheckSightings(t *testing.T) {
	history := []chaos.Hold{leadership("a", 1, 0, 10), leadership("b", 2, 10, 20), leadership("c", 5, 21, 30)}
	tests := []struct {
		name   string
		told   []chaos.Sighting
		strict bool
		want   int
	}{
		{name: "each in order", told: []chaos.Sighting{told("a", 1, 1), told("b", 2, 12), told("c", 5, 25)}, strict: true},
		{name: "skips are allowed", told: []chaos.Sighting{told("a", 1, 1), told("c", 5, 25)}, strict: true},
		{name: "repeats for Leader", told: []chaos.Sighting{told("b", 2, 12), told("b", 2, 15)}},
		{name: "repeats for Observe", told: []chaos.Sighting{told("b", 2, 12), told("b", 2, 15)}, strict: true, want: 1},
		{name: "back in term", told: []chaos.Sighting{told("b", 2, 12), told("a", 1, 15)}, want: 1},
		{name: "phantom term", told: []chaos.Sighting{told("a", 3, 12)}, want: 1},
		{name: "wrong value", told: []chaos.Sighting{told("b", 1, 2)}, want: 1},
		{name: "after its lease", told: []chaos.Sighting{told("a", 1, 40)}, want: 1},
		{name: "within the slack", told: []chaos.Sighting{told("a", 1, 24)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := chaos.CheckSightings(history, "k", tc.told, tc.strict, 4*ms)
			if len(got) != tc.want {
				t.Errorf("misreports = %v, want %d", got, tc.want)
			}
		})
	}
}

package redlock

import (
	"testing"

	"github.com/seed818c56a1/quorumlock/quorum"
	"pgregory.net/rapid"
)

// fenceModel is N nodes' fencing counters for one key, driven by the
// library's own token choice (fencePlan) and the scripts' rules: a grant
// increments, a write-back raises, an Unlock raises every node it reaches, a
// restart without persistence empties a node.
type fenceModel struct {
	counters []int64
	alive    []bool
	last     int64 // the last token handed out
}

func (m *fenceModel) need() int { return quorum.Majority(len(m.counters)) }

// upToDate counts the nodes whose counter has reached the last token.
func (m *fenceModel) upToDate(except int) int {
	n := 0
	for i, c := range m.counters {
		if i != except && c >= m.last {
			n++
		}
	}
	return n
}

// grant draws which live nodes grant an attempt, and applies their increments.
func (m *fenceModel) grant(t *rapid.T) quorum.Tally[int64] {
	tally := quorum.Tally[int64]{Votes: make([]quorum.Vote[int64], len(m.counters)), Need: m.need()}
	for i := range m.counters {
		if m.alive[i] && rapid.Bool().Draw(t, "grants") {
			m.counters[i]++
			tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Granted, Value: m.counters[i]}
		} else {
			tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Refused}
		}
	}
	return tally
}

// acquire is one attempt; when it wins and enough write-backs land, it is a
// holding whose token must exceed every earlier one.
func (m *fenceModel) acquire(t *rapid.T) {
	tally := m.grant(t)
	if !tally.Won() {
		return // a failed attempt: its increments stay, harmlessly
	}
	token, behind := fencePlan(&tally)
	current := tally.Count(quorum.Granted) - len(behind)
	for _, n := range behind {
		if rapid.Bool().Draw(t, "write-back lands") {
			m.counters[n] = max(m.counters[n], token)
			current++
		}
	}
	if current < m.need() {
		return // the library refuses such an acquisition
	}
	if token <= m.last {
		t.Fatalf("token %d after %d: counters %v", token, m.last, m.counters)
	}
	m.last = token
	for i := range m.counters { // Unlock raises every node it reaches
		if m.alive[i] && rapid.Bool().Draw(t, "unlock reaches") {
			m.counters[i] = max(m.counters[i], token)
		}
	}
}

// restart empties a node — allowed only under the documented assumption:
// enough nodes keep the last token that every majority still meets one.
func (m *fenceModel) restart(t *rapid.T) {
	n := rapid.IntRange(0, len(m.counters)-1).Draw(t, "node")
	if m.upToDate(n) <= len(m.counters)-m.need() {
		t.Skip("would lose the last token on too many nodes")
	}
	m.counters[n] = 0
}

// toggle takes a node down or brings it back, keeping a majority up.
func (m *fenceModel) toggle(t *rapid.T) {
	n := rapid.IntRange(0, len(m.counters)-1).Draw(t, "node")
	down := 0
	for _, a := range m.alive {
		if !a {
			down++
		}
	}
	if m.alive[n] && down+1 > len(m.counters)-m.need() {
		t.Skip("would lose the majority")
	}
	m.alive[n] = !m.alive[n]
}

// Tokens strictly increase over random interleavings of grants, refusals,
// write-backs, unlocks, empty restarts and node loss.
func TestFencingTokensOnlyGrow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.SampledFrom([]int{3, 5, 7}).Draw(t, "nodes")
		m := &fenceModel{counters: make([]int64, n), alive: make([]bool, n)}
		for i := range m.alive {
			m.alive[i] = true
		}
		t.Repeat(map[string]func(*rapid.T){
			"acquire": m.acquire,
			"restart": m.restart,
			"toggle":  m.toggle,
		})
	})
}

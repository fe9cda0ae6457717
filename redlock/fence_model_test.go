package redlock

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// fenceModel is N nodes' fencing counters for one key, driven by the
// library's own token choice (fencePlan) and the scripts' rules: a grant
// increments, a write-back raises, an Unlock raises every node it reaches, a
// restart without persistence empties a node. Its random choices come from
// rng; trace records the steps taken, for a failure's report.
type fenceModel struct {
	rng      *rand.Rand
	trace    []string
	counters []int64
	alive    []bool
	last     int64 // the last token handed out
}

func (m *fenceModel) need() int { return quorum.Majority(len(m.counters)) }

func (m *fenceModel) coin() bool { return m.rng.IntN(2) == 0 }

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
func (m *fenceModel) grant() quorum.Tally[int64] {
	tally := quorum.Tally[int64]{Votes: make([]quorum.Vote[int64], len(m.counters)), Need: m.need()}
	for i := range m.counters {
		if m.alive[i] && m.coin() {
			m.counters[i]++
			tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Granted, Value: m.counters[i]}
		} else {
			tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Refused}
		}
	}
	return tally
}

// acquire is one attempt; when it wins and enough write-backs land, it is a
// holding whose token must exceed every earlier one. It returns a violation,
// or "".
func (m *fenceModel) acquire() string {
	tally := m.grant()
	if !tally.Won() {
		return "" // a failed attempt: its increments stay, harmlessly
	}
	token, behind := fencePlan(&tally)
	current := tally.Count(quorum.Granted) - len(behind)
	for _, n := range behind {
		if m.coin() { // the write-back lands
			m.counters[n] = max(m.counters[n], token)
			current++
		}
	}
	if current < m.need() {
		return "" // the library refuses such an acquisition
	}
	if token <= m.last {
		return fmt.Sprintf("token %d after %d: counters %v", token, m.last, m.counters)
	}
	m.last = token
	for i := range m.counters { // Unlock raises every node it reaches
		if m.alive[i] && m.coin() {
			m.counters[i] = max(m.counters[i], token)
		}
	}
	return ""
}

// restart empties a node — only under the documented assumption: enough
// nodes keep the last token that every majority still meets one.
func (m *fenceModel) restart() {
	n := m.rng.IntN(len(m.counters))
	if m.upToDate(n) <= len(m.counters)-m.need() {
		return // would lose the last token on too many nodes
	}
	m.counters[n] = 0
}

// toggle takes a node down or brings it back, keeping a majority up.
func (m *fenceModel) toggle() {
	n := m.rng.IntN(len(m.counters))
	down := 0
	for _, a := range m.alive {
		if !a {
			down++
		}
	}
	if m.alive[n] && down+1 > len(m.counters)-m.need() {
		return // would lose the majority
	}
	m.alive[n] = !m.alive[n]
}

// run plays steps random operations on a fresh model of n nodes, returning
// the first violation with the steps that led to it, or "".
func (m *fenceModel) run(n, steps int) string {
	m.counters, m.alive = make([]int64, n), make([]bool, n)
	for i := range m.alive {
		m.alive[i] = true
	}
	for range steps {
		switch op := m.rng.IntN(3); op {
		case 0:
			m.trace = append(m.trace, fmt.Sprintf("acquire %v", m.counters))
			if v := m.acquire(); v != "" {
				return v + "\nsteps:\n  " + strings.Join(m.trace, "\n  ")
			}
		case 1:
			m.trace = append(m.trace, "restart")
			m.restart()
		default:
			m.trace = append(m.trace, "toggle")
			m.toggle()
		}
	}
	return ""
}

// fenceSequences is how many random sequences TestFencingTokensOnlyGrow
// plays (each of up to fenceSteps operations, on 3, 5 or 7 nodes).
const (
	fenceSequences = 20000
	fenceSteps     = 100
)

// Tokens strictly increase over random interleavings of grants, refusals,
// write-backs, unlocks, empty restarts and node loss. Each sequence has its
// own seed, printed with a violation, so that a failure replays exactly.
func TestFencingTokensOnlyGrow(t *testing.T) {
	violations := 0
	for seed := range uint64(fenceSequences) {
		m := &fenceModel{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
		n := []int{3, 5, 7}[m.rng.IntN(3)]
		if v := m.run(n, 1+m.rng.IntN(fenceSteps)); v != "" {
			violations++
			if violations <= 3 {
				t.Errorf("seed %d, %d nodes: %s", seed, n, v)
			}
		}
	}
	if violations > 0 {
		t.Fatalf("%d of %d sequences handed out a token that did not grow", violations, fenceSequences)
	}
}

package redlock

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// fenceModel is N nodes' fencing state for one key — counters, each node's
// clock, its writer's lock or its readers, each with a lease end on the
// node's clock — driven by the library's own choice of token and of the
// nodes to write it back to (fencePlan, coverWindow) and by the scripts'
// rules: a writer's grant issues max(counter + 1, clock) and says whether
// it is the clock's (next_token), a reader takes max(counter, clock)
// (counter_read), Unlock raises the counter of every node it reaches that
// is not known to hold the token, a lease runs out on its node's clock, an
// empty restart loses everything and is not counted for the restart guard.
// Time is in µs; the clocks are the Client's plus a fixed offset per node,
// less a backward step that may come and go. Its random choices come from
// rng; trace records the steps taken, for a failure's report.
type fenceModel struct {
	rng   *rand.Rand
	rules fenceRules
	trace []string

	now   int64 // the Client's clock
	nodes []modelNode
	holds []*modelHold // not yet released

	lastWriter int64 // the largest writer's token handed out
	maxToken   int64 // the largest token handed out, readers' included
	seq        int
}

// fenceRules are the choices under test: the library's, or a loosened one
// that the model must catch.
type fenceRules struct {
	window       int64 // coverWindow's, for writers
	clockBlind   bool  // loosened: take every grant as the clock's
	readerNoTime bool  // loosened: a reader takes the counter alone
}

type modelNode struct {
	alive     bool
	counter   int64
	offset    int64         // the node's clock less the Client's, fixed
	back      int64         // a backward step in force, in [0, maxBack]
	writer    int           // the holding whose lock this is, 0 for none
	writerEnd int64         // its lease end on the node's clock
	readers   map[int]int64 // holding → lease end on the node's clock
	started   int64         // the Client's clock at its last empty restart
	restarted bool          // it restarted at least once
}

type modelHold struct {
	id     int
	reader bool
	token  int64
	fenced []bool // nodes known to hold a counter at least the token
}

// Bounds of the model, for a TTL of modelTTL: what the argument assumes.
const (
	modelTTL       = int64(time.Second / time.Microsecond)
	modelMaxOffset = 3 * modelTTL / 10   // clocks within 0.6 TTL of each other
	modelMaxBack   = 35 * modelTTL / 100 // no clock steps back by more
	modelMaxRound  = 85 * modelTTL / 100 // a round longer leaves no validity
	modelGuard     = modelTTL            // the restart guard: at least the TTL
)

func (m *fenceModel) need() int { return quorum.Majority(len(m.nodes)) }

func (m *fenceModel) coin() bool { return m.rng.IntN(2) == 0 }

// between draws from [lo, hi], either end two times in three: the corners
// are where the bounds are tight.
func (m *fenceModel) between(lo, hi int64) int64 {
	switch m.rng.IntN(3) {
	case 0:
		return lo
	case 1:
		return hi
	}
	return lo + m.rng.Int64N(hi-lo+1)
}

// clock is node i's clock at the Client's time at.
func (m *fenceModel) clock(i int, at int64) int64 {
	nd := &m.nodes[i]
	return at + nd.offset - nd.back
}

// free reports whether node i may grant a reader (or, !reader, a writer)
// at its clock c: no live writer, and for a writer no live reader either.
func (m *fenceModel) free(i int, c int64, reader bool) bool {
	nd := &m.nodes[i]
	if nd.writer != 0 && c < nd.writerEnd {
		return false
	}
	nd.writer = 0
	for h, end := range nd.readers {
		if c >= end {
			delete(nd.readers, h)
		} else if !reader {
			return false
		}
	}
	return true
}

// offer is what node i would grant holding h at the Client's time at, if
// it is up and free: its token and whether it came from the clock.
func (m *fenceModel) offer(i int, h *modelHold, at int64) (token int64, clock, ok bool) {
	nd := &m.nodes[i]
	c := m.clock(i, at)
	if !nd.alive || !m.free(i, c, h.reader) {
		return 0, false, false
	}
	if h.reader {
		token = nd.counter
		if !m.rules.readerNoTime {
			token = max(token, c)
		}
		return token, false, true
	}
	return max(nd.counter+1, c), nd.counter < c, true
}

// grant is node i's grant of token to holding h at the Client's time at.
func (m *fenceModel) grant(i int, h *modelHold, at, token int64) {
	nd := &m.nodes[i]
	end := m.clock(i, at) + modelTTL
	nd.counter = token
	if !h.reader {
		nd.writer, nd.writerEnd = h.id, end
		return
	}
	if nd.readers == nil {
		nd.readers = map[int]int64{}
	}
	nd.readers[h.id] = end
}

// counted reports whether node i's grant at the Client's time at counts:
// not within the restart guard of its last empty restart.
func (m *fenceModel) counted(i int, at int64) bool {
	nd := &m.nodes[i]
	return !nd.restarted || at >= nd.started+modelGuard
}

// acquire is one attempt of a writer or a reader; when it wins and enough
// write-backs land, it is a holding whose token must exceed every earlier
// one (a reader's: be at least every earlier writer's). It returns a
// violation, or "".
func (m *fenceModel) acquire(reader bool) string {
	m.seq++
	h := &modelHold{id: m.seq, reader: reader}
	tally := quorum.Tally[int64]{Votes: make([]quorum.Vote[int64], len(m.nodes)), Need: m.need()}
	clock := make([]bool, len(m.nodes))
	granted := make([]bool, len(m.nodes))
	for i := range tally.Votes {
		tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Refused}
	}
	round := m.between(0, modelMaxRound)
	// Half the attempts are the adversary's: the slow clocks asked first,
	// the fast ones last, and of the nodes that can grant, the majority
	// with the smallest tokens does.
	adversary := m.coin()
	at := make([]int64, len(m.nodes))
	offers := make([]int64, len(m.nodes))
	var open []int
	for i := range m.nodes {
		at[i] = m.now + m.between(0, round)
		if adversary {
			at[i] = m.now
			if m.nodes[i].offset > 0 {
				at[i] += round
			}
		}
		token, c, ok := m.offer(i, h, at[i])
		if ok && (adversary || m.coin()) {
			offers[i], clock[i] = token, c || m.rules.clockBlind
			open = append(open, i)
		}
	}
	if adversary {
		slices.SortFunc(open, func(a, b int) int { return cmp.Compare(offers[a], offers[b]) })
		open = open[:min(len(open), m.need())]
	}
	for _, i := range open {
		m.grant(i, h, at[i], offers[i])
		granted[i] = true
		if m.counted(i, at[i]) {
			tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Granted, Value: offers[i]}
		}
	}
	m.now += round
	if !tally.Won() {
		m.undo(h, granted)
		return ""
	}
	window := m.rules.window
	if reader {
		window = 0
	}
	token, behind := fencePlan(&tally, clock, window)
	h.token, h.fenced = token, make([]bool, len(m.nodes))
	good := 0
	for i, v := range tally.Votes {
		if v.Outcome != quorum.Granted {
			continue
		}
		switch {
		case v.Value >= token:
			h.fenced[i] = true
			good++
		case !slices.Contains(behind, i):
			good++ // covered by its clock
		case m.nodes[i].alive && m.coin(): // the write-back lands
			m.nodes[i].counter = max(m.nodes[i].counter, token)
			h.fenced[i] = true
			good++
		}
	}
	if good < m.need() {
		m.undo(h, granted) // the library refuses such an acquisition
		return ""
	}
	if v := m.check(h); v != "" {
		return v
	}
	m.holds = append(m.holds, h)
	return ""
}

// check records holding h's token, or returns how it broke the order.
func (m *fenceModel) check(h *modelHold) string {
	switch {
	case h.reader && h.token < m.lastWriter:
		return fmt.Sprintf("reader's token %d below the last writer's %d", h.token, m.lastWriter)
	case !h.reader && h.token <= m.maxToken:
		return fmt.Sprintf("writer's token %d after %d", h.token, m.maxToken)
	}
	if !h.reader {
		m.lastWriter = h.token
	}
	m.maxToken = max(m.maxToken, h.token)
	return ""
}

// undo drops a failed attempt's grants where the undo lands, raising
// nothing; elsewhere they stay until their lease runs out.
func (m *fenceModel) undo(h *modelHold, granted []bool) {
	for i, g := range granted {
		if g && m.nodes[i].alive && m.coin() {
			m.drop(i, h)
		}
	}
}

func (m *fenceModel) drop(i int, h *modelHold) {
	nd := &m.nodes[i]
	if nd.writer == h.id {
		nd.writer = 0
	}
	delete(nd.readers, h.id)
}

// release is the Unlock of a random holding, perhaps long after its lease
// ran out: every live node it reaches that is not known to hold the token
// raises its counter to it, and drops the holding's lock or read.
func (m *fenceModel) release() {
	if len(m.holds) == 0 {
		return
	}
	k := m.rng.IntN(len(m.holds))
	h := m.holds[k]
	m.holds = append(m.holds[:k], m.holds[k+1:]...)
	for i := range m.nodes {
		if !m.nodes[i].alive || !m.coin() {
			continue
		}
		if !h.fenced[i] {
			m.nodes[i].counter = max(m.nodes[i].counter, h.token)
		}
		m.drop(i, h)
	}
}

// restart empties a node: it is not counted for the restart guard.
func (m *fenceModel) restart() {
	nd := &m.nodes[m.rng.IntN(len(m.nodes))]
	nd.counter, nd.writer, nd.readers = 0, 0, nil
	nd.started, nd.restarted = m.now, true
}

// step moves a node's clock: back by up to modelMaxBack from where it would
// be, or forward again.
func (m *fenceModel) step() {
	nd := &m.nodes[m.rng.IntN(len(m.nodes))]
	nd.back = m.between(0, modelMaxBack)
}

// toggle takes a node down or brings it back, keeping a majority up.
func (m *fenceModel) toggle() {
	n := m.rng.IntN(len(m.nodes))
	down := 0
	for _, nd := range m.nodes {
		if !nd.alive {
			down++
		}
	}
	if m.nodes[n].alive && down+1 > len(m.nodes)-m.need() {
		return // would lose the majority
	}
	m.nodes[n].alive = !m.nodes[n].alive
}

// run plays steps random operations on a fresh model of n nodes, returning
// the first violation with the steps that led to it, or "".
func (m *fenceModel) run(n, steps int) string {
	m.nodes = make([]modelNode, n)
	m.now = 1_000 * modelTTL
	for i := range m.nodes {
		m.nodes[i] = modelNode{alive: true, offset: m.between(-modelMaxOffset, modelMaxOffset)}
	}
	for range steps {
		op := m.rng.IntN(10)
		m.trace = append(m.trace, fmt.Sprintf("t=%d op %d counters %v", m.now, op, m.counters()))
		var v string
		switch op {
		case 0, 1, 2:
			v = m.acquire(false)
		case 3:
			v = m.acquire(true)
		case 4:
			m.release()
		case 5, 6:
			m.now += m.rng.Int64N(7) * modelTTL / 4 // leases run out, or not
		case 7:
			m.restart()
		case 8:
			m.step()
		default:
			m.toggle()
		}
		if v != "" {
			return v + "\nsteps:\n  " + strings.Join(m.trace, "\n  ")
		}
	}
	return ""
}

func (m *fenceModel) counters() []int64 {
	c := make([]int64, len(m.nodes))
	for i, nd := range m.nodes {
		c[i] = nd.counter
	}
	return c
}

// fenceSequences is how many random sequences a model test plays (each of
// up to fenceSteps operations, on 3, 5 or 7 nodes).
const (
	fenceSequences = 20000
	fenceSteps     = 100
)

// violations plays fenceSequences under rules and returns how many broke
// the order of tokens, and the first few reports. Each sequence has its own
// seed, printed with a violation, so that a failure replays exactly.
func violations(rules fenceRules) (int, []string) {
	count, reports := 0, []string(nil)
	for seed := range uint64(fenceSequences) {
		m := &fenceModel{rng: rand.New(rand.NewPCG(seed, 0x5eed)), rules: rules}
		n := []int{3, 3, 5, 7}[m.rng.IntN(4)]
		if v := m.run(n, 1+m.rng.IntN(fenceSteps)); v != "" {
			count++
			if len(reports) < 3 {
				reports = append(reports, fmt.Sprintf("seed %d, %d nodes: %s", seed, n, v))
			}
		}
	}
	return count, reports
}

// libraryRules are the library's: coverWindow for the model's TTL and the
// default drift factor.
func libraryRules() fenceRules {
	return fenceRules{window: coverWindow(time.Duration(modelTTL)*time.Microsecond, DefaultDriftFactor)}
}

// Tokens only grow — every writer's above every earlier token, every
// reader's at least every earlier writer's — over random interleavings of
// grants spread over a round, refusals, write-backs where the library asks
// for them, unlocks, leases running out on each node's clock, empty
// restarts under the restart guard, clocks apart and stepping back within
// the stated bounds, and node loss.
func TestFencingTokensOnlyGrow(t *testing.T) {
	rules := libraryRules()
	if rules.window <= 0 {
		t.Fatalf("coverWindow = %d: the model would test no covered grant", rules.window)
	}
	if n, reports := violations(rules); n > 0 {
		for _, r := range reports {
			t.Error(r)
		}
		t.Fatalf("%d of %d sequences handed out a token out of order", n, fenceSequences)
	}
}

// The model catches a write-back skipped where the argument does not cover
// it — a window past the TTL, where a lease runs out on a slow clock before
// that clock reaches the token — and a reader that takes the counter alone
// where a writer's lease ran out without a write-back. Each loosening must
// break the order of tokens in some sequence, or the model tests nothing.
func TestFencingModelCatchesLooseRules(t *testing.T) {
	base := libraryRules()
	for name, rules := range map[string]fenceRules{
		"window of two TTLs":   {window: 2 * modelTTL},
		"reader without clock": {window: base.window, readerNoTime: true},
	} {
		if n, _ := violations(rules); n == 0 {
			t.Errorf("%s: no violation in %d sequences: the model does not test the rule", name, fenceSequences)
		} else {
			t.Logf("%s: %d of %d sequences out of order", name, n, fenceSequences)
		}
	}
}

// hold is a scripted attempt: node i grants holding h at the Client's time
// at[i] (nodes not in at refuse), every write-back the library asks for
// lands, and it returns the holding's token and the nodes covered by their
// clock.
func (m *fenceModel) hold(t *testing.T, h *modelHold, at map[int]int64) int64 {
	t.Helper()
	tally := quorum.Tally[int64]{Votes: make([]quorum.Vote[int64], len(m.nodes)), Need: m.need()}
	clock := make([]bool, len(m.nodes))
	for i := range tally.Votes {
		tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Refused}
		when, ok := at[i]
		if !ok {
			continue
		}
		token, c, free := m.offer(i, h, when)
		if !free {
			t.Fatalf("holding %d: node %d is not free at %d", h.id, i, when)
		}
		m.grant(i, h, when, token)
		tally.Votes[i] = quorum.Vote[int64]{Outcome: quorum.Granted, Value: token}
		clock[i] = c || m.rules.clockBlind
	}
	token, behind := fencePlan(&tally, clock, m.rules.window)
	h.token, h.fenced = token, make([]bool, len(m.nodes))
	for i, v := range tally.Votes {
		if v.Outcome == quorum.Granted && (v.Value >= token || slices.Contains(behind, i)) {
			m.nodes[i].counter = max(m.nodes[i].counter, token)
			h.fenced[i] = true
		}
	}
	return token
}

// A grant whose token is its counter's — a release raised the counter
// from a faster clock — is written back even when near the token: its
// lease runs out by its node's clock, which may still be behind the token
// then. Taken as the clock's, the next holder's token would not be larger.
// Nodes x (0) and z (2) run 0.3 TTL slow, y (1) 0.3 TTL fast.
func TestFencingCounterGrantIsWrittenBack(t *testing.T) {
	for _, blind := range []bool{false, true} {
		rules := libraryRules()
		rules.clockBlind = blind
		m := &fenceModel{rules: rules}
		m.nodes = []modelNode{{alive: true, offset: -modelMaxOffset}, {alive: true, offset: modelMaxOffset}, {alive: true, offset: -modelMaxOffset}}
		start := 1_000 * modelTTL
		// H0: x early, y late in a slow round; x is written back to y's token.
		h0 := &modelHold{id: 1}
		m.hold(t, h0, map[int]int64{0: start, 1: start + modelMaxRound})
		m.drop(0, h0) // released at once: x and y hold the token
		m.drop(1, h0)
		// H: x's token is its counter + 1, y's its clock, 0.4 TTL on.
		h := &modelHold{id: 2}
		now := start + modelMaxRound
		first := m.hold(t, h, map[int]int64{0: now, 1: now + 4*modelTTL/10})
		// H2 as soon as H's lease ran out on x's clock; y still holds H.
		end := m.nodes[0].writerEnd - m.clock(0, 0)
		next := m.hold(t, &modelHold{id: 3}, map[int]int64{0: end, 2: end})
		if regressed := next <= first; regressed != blind {
			t.Errorf("clockBlind %v: token %d after %d", blind, next, first)
		}
	}
}

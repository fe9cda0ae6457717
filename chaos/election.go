package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// Elections. A leadership is a hold of its name's lock (Campaign), recorded
// by Lead as a Hold of Key name with the leader's Value: Check then finds
// leaderships that overlapped and terms that did not grow in the order the
// leaderships began. What readers were told of the leaders (Leader,
// Observe) is checked against those leaderships by CheckSightings.

// Lead runs work while client leads — l is what Campaign returned, value
// what it campaigned with — records the leadership and resigns, as Hold
// does for a lock.
func (r *Recorder) Lead(ctx context.Context, client, value string, l *redlock.Lock, work func(context.Context)) error {
	return r.hold(ctx, Hold{Client: client, Value: value}, l, work)
}

// A Sighting is one leader a reader was told, and when: Asked when the
// reader asked (Leader's call; for Observe, when it was sent), At when it
// was told.
type Sighting struct {
	Asked, At time.Duration
	Leader    redlock.Leader
}

// A Misreport is a sighting that no history of leaderships explains.
type Misreport struct {
	Got Sighting
	Why string
}

func (m Misreport) String() string {
	return fmt.Sprintf("told %q at term %d at %v: %s", m.Got.Leader.Value, m.Got.Leader.Term, m.Got.At.Round(time.Millisecond), m.Why)
}

// CheckSightings checks what one reader was told of name's leaders, in the
// order it was told, against history: each leader told is a leadership of
// name recorded by Lead (its term and value) whose lease may still have
// run when the reader asked — the reader asked no later than slack after
// the later of its end and its Until; and the terms never go back: each is
// larger than the one told before it when strict (Observe), at least as
// large otherwise (Leader).
func CheckSightings(history []Hold, name string, told []Sighting, strict bool, slack time.Duration) []Misreport {
	leaderships := map[int64]Hold{}
	for _, h := range history {
		if h.Key == name {
			leaderships[h.Token] = h
		}
	}
	var out []Misreport
	var last int64
	for _, s := range told {
		h, ok := leaderships[s.Leader.Term]
		switch {
		case !ok || h.Value != s.Leader.Value:
			out = append(out, Misreport{s, "no such leadership"})
		case s.Asked > max(h.End, h.Until)+slack:
			out = append(out, Misreport{s, fmt.Sprintf("asked %v after the leadership %s ended", (s.Asked - max(h.End, h.Until)).Round(time.Millisecond), h)})
		}
		if s.Leader.Term < last || (strict && s.Leader.Term == last) {
			out = append(out, Misreport{s, fmt.Sprintf("after term %d", last)})
		}
		last = max(last, s.Leader.Term)
	}
	return out
}

package chaos

import (
	"time"

	"github.com/seed818c56a1/quorumlock/history"
)

// Instant returns the instant at offset d from the Recorder's epoch: the
// time of a history record.
func (r *Recorder) Instant(d time.Duration) time.Time { return r.epoch.Add(d) }

// Records returns the Recorder's history as records of package history,
// for its report (history.Render): each hold as its grant and its release,
// or its loss when the library signalled one; then each write to a fenced
// store that was accepted or refused (a failed one, whose outcome is
// unknown, is left out); then extra (the run, its faults) as given.
func (r *Recorder) Records(writes []Write, extra ...history.Record) []history.Record {
	holds := r.History()
	out := make([]history.Record, 0, 2*len(holds)+len(writes)+len(extra))
	for _, h := range holds {
		grant := history.Record{Type: history.TypeGrant, Time: r.Instant(h.Start), Until: r.Instant(h.Until),
			Client: h.Client, Key: h.Key, Token: h.Token, Shared: h.Shared}
		end := grant
		end.Type, end.Time, end.Shared = history.TypeRelease, r.Instant(h.End), false
		switch {
		case h.Lost:
			end.Type, end.Time = history.TypeLoss, r.Instant(h.LossAt)
			if h.End < h.LossAt {
				end.Time = r.Instant(h.End)
			}
		case h.Unsignalled:
			end.Note = "Unlock found the lock lost: no loss was signalled"
		}
		out = append(out, grant, end)
	}
	for _, w := range writes {
		if w.Err != nil {
			continue // neither accepted nor refused: no record says that
		}
		out = append(out, history.Record{Type: history.TypeWrite, Time: r.Instant(w.Start), Key: w.Key, Token: w.Token,
			Refused: w.Refused, Seen: w.Seen})
	}
	return append(out, extra...)
}

package chaos_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/fence"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

func TestCheckWrites(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	acc := func(token int64, start, end int) chaos.Write {
		return chaos.Write{Key: "k", Token: token, Start: ms(start), End: ms(end), Accepted: true}
	}
	ref := func(token, seen int64, start, end int) chaos.Write {
		return chaos.Write{Key: "k", Token: token, Seen: seen, Start: ms(start), End: ms(end), Refused: true}
	}
	for _, tc := range []struct {
		name              string
		writes            []chaos.Write
		stale, unfounded  int
		accepted, refused int
	}{
		{"in order", []chaos.Write{acc(1, 0, 1), acc(2, 2, 3), acc(2, 4, 5), ref(1, 2, 6, 7)}, 0, 0, 3, 1},
		{"concurrent, either order", []chaos.Write{acc(2, 0, 10), acc(1, 5, 8)}, 0, 0, 2, 0},
		{"stale accepted after a larger one", []chaos.Write{acc(5, 0, 1), acc(4, 2, 3)}, 1, 0, 2, 0},
		{"other keys do not count", []chaos.Write{acc(5, 0, 1), {Key: "j", Token: 4, Start: ms(2), End: ms(3), Accepted: true}}, 0, 0, 2, 0},
		{"refused with nothing larger sent", []chaos.Write{acc(3, 0, 1), ref(4, 5, 2, 3)}, 0, 1, 1, 1},
		{"refused by a write sent after the answer", []chaos.Write{ref(1, 2, 0, 1), acc(2, 2, 3)}, 0, 1, 1, 1},
		{"refused by a failed write", []chaos.Write{{Key: "k", Token: 9, Start: ms(0), End: ms(4), Err: fence.ErrInvalid}, ref(1, 9, 2, 3)}, 0, 0, 0, 1},
		{"seen not larger", []chaos.Write{acc(3, 0, 1), ref(3, 3, 2, 3)}, 0, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := chaos.CheckWrites(tc.writes)
			if len(rep.StaleAccepted) != tc.stale || len(rep.Unfounded) != tc.unfounded ||
				rep.Accepted != tc.accepted || rep.Refused != tc.refused || rep.Safe() != (tc.stale+tc.unfounded == 0) {
				t.Errorf("%s; want stale-accepted=%d unfounded=%d accepted=%d refused=%d", &rep, tc.stale, tc.unfounded, tc.accepted, tc.refused)
			}
		})
	}
}

// A FencedStore over a fence.Redis records each write as the server
// answered it.
func TestFencedStoreThroughRedis(t *testing.T) {
	c := redislab.Start(t, 1).Clients(t)[0]
	rec := chaos.NewRecorder()
	s := chaos.NewFencedStore(fence.NewRedis(c), rec.Now)
	for _, st := range []struct {
		token int64
		want  bool
	}{{3, true}, {3, true}, {5, true}, {4, false}, {6, true}} {
		if got := s.Write("k", st.token); got != st.want {
			t.Errorf("Write(k, %d) = %v, want %v", st.token, got, st.want)
		}
	}
	rep := chaos.CheckWrites(s.Writes())
	if !rep.Safe() || rep.Accepted != 4 || rep.Refused != 1 || rep.Failed != 0 {
		t.Errorf("%s, want 4 accepted, 1 refused, safe", &rep)
	}
	if w := s.Writes()[3]; w.Seen != 5 || w.End < w.Start || w.Start == 0 {
		t.Errorf("refused write recorded as %+v, want Seen 5 and its times", w)
	}
	if v, tok, err := fence.NewRedis(c).Get(t.Context(), "k"); err != nil || v != "6" || tok != 6 {
		t.Errorf("store holds %q, %d (%v), want the last writer's token", v, tok, err)
	}
}

// resource starts a redis-server apart from the lock's masters — the data
// the locks protect, which no fault touches — and returns a FencedStore
// that writes through a fence.Redis on it, timing its writes on rec's
// clock, and that fence.Redis.
func resource(t *testing.T, rec *chaos.Recorder) (*chaos.FencedStore, *fence.Redis) {
	t.Helper()
	// The wrapper makes it a local process, never a REDLOCK_ADDRS master.
	c := redislab.Start(t, 1, redislab.WithWrapper("env")).Clients(t)[0]
	r := fence.NewRedis(c)
	return chaos.NewFencedStore(r, rec.Now), r
}

// requireFenced fails t unless the store accepted no stale write, refused
// none without cause and failed none, and each key holds its largest
// accepted token and that token as its value; it logs the figures.
func requireFenced(t *testing.T, store *chaos.FencedStore, r *fence.Redis) chaos.WriteReport {
	t.Helper()
	writes := store.Writes()
	rep := chaos.CheckWrites(writes)
	t.Logf("%s: %s", t.Name(), &rep)
	for _, w := range rep.StaleAccepted[:min(5, len(rep.StaleAccepted))] {
		t.Errorf("stale write accepted: %+v", w)
	}
	for _, w := range rep.Unfounded[:min(5, len(rep.Unfounded))] {
		t.Errorf("refusal without cause: %+v", w)
	}
	if len(rep.StaleAccepted) > 0 || len(rep.Unfounded) > 0 || rep.Failed > 0 {
		t.Errorf("%d stale writes accepted, %d refusals without cause, %d failed writes; want 0 each",
			len(rep.StaleAccepted), len(rep.Unfounded), rep.Failed)
	}
	top := map[string]int64{}
	for _, w := range writes {
		if w.Accepted {
			top[w.Key] = max(top[w.Key], w.Token)
		}
	}
	for key, want := range top {
		v, tok, err := r.Get(t.Context(), key)
		if err != nil || tok != want || v != strconv.FormatInt(want, 10) {
			t.Errorf("store key %q holds %q, token %d (%v); want the largest accepted, %d", key, v, tok, err, want)
		}
	}
	return rep
}

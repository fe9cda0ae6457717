package chaos_test

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/chaos"
	"github.com/seed818c56a1/quorumlock/history"
)

// drawn counts the SVG rectangles of page whose class starts with class.
func drawn(page, class string) int {
	return len(regexp.MustCompile(`<rect class="`+class+`[ "]`).FindAllStringIndex(page, -1))
}

func renderRecords(t *testing.T, recs []history.Record) string {
	t.Helper()
	var b bytes.Buffer
	if err := history.Render(&b, recs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRecordsDrawEveryHold: a Recorder's holds, overlapping and lost
// ones included, and a fenced store's writes become records that the
// report draws one for one, the overlap and the stale write in red.
func TestRecordsDrawEveryHold(t *testing.T) {
	rec := chaos.NewRecorder()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rec.Add(chaos.Hold{Client: "a", Key: "k", Token: 1, Start: ms(0), End: ms(100), Until: ms(400)})
	rec.Add(chaos.Hold{Client: "b", Key: "k", Token: 2, Start: ms(150), End: ms(300), Until: ms(600), Lost: true, LossAt: ms(300)})
	rec.Add(chaos.Hold{Client: "c", Key: "k", Token: 3, Start: ms(250), End: ms(400), Until: ms(700)}) // overlaps b
	rec.Add(chaos.Hold{Client: "r1", Key: "rw", Token: 1, Shared: true, Start: ms(0), End: ms(50)})
	rec.Add(chaos.Hold{Client: "r2", Key: "rw", Token: 1, Shared: true, Start: ms(10), End: ms(60)})
	store := &chaos.FencedStore{}
	store.Write("k", 3)
	store.Write("k", 2) // stale: refused
	recs := rec.Records(store.Writes())
	page := renderRecords(t, recs)
	for _, c := range []struct {
		class string
		want  int
	}{{"hold", 5}, {"hold lost", 1}, {"after-loss", 1}, {"overlap", len(chaos.Check(rec.History()).Overlaps)}, {"write refused", 1}, {"write", 2}} {
		if got := drawn(page, c.class); got != c.want {
			t.Errorf("%d rects of class %q drawn, want %d", got, c.class, c.want)
		}
	}
	if drawn(page, "overlap") != 1 {
		t.Errorf("the overlap of b and c is not drawn once")
	}
}

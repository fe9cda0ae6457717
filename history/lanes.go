package history

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// nodeLanes draws a lane per node and each fault as a band on the lane of
// the node it hit; a fault of no one node spans every node lane.
func (c *canvas) nodeLanes(r *run) {
	nodes := r.nodes
	if len(nodes) == 0 && len(r.faults) == 0 {
		return
	}
	if len(nodes) == 0 {
		nodes = []string{"all nodes"}
	}
	c.heading("faults by node")
	tops := map[string]float64{}
	for _, n := range nodes {
		tops[n] = c.lane(n, 1, "")
	}
	first, all := tops[nodes[0]], float64(len(nodes))*(rowH+laneGap)-laneGap
	for _, f := range r.faults {
		top, h, where := first, all, "every node"
		if f.Node != "" {
			top, h, where = tops[f.Node], rowH, f.Node
		}
		end := f.End
		if end.Before(f.Time) {
			end = f.Time
		}
		x, w := c.span(f.Time, end, 3)
		kind := f.Fault
		if kind == "" {
			kind = "fault"
		}
		title := fmt.Sprintf("%s on %s\nfrom %s to %s (%v)", kind, where, c.ms(f.Time), c.ms(end), end.Sub(f.Time).Round(time.Millisecond))
		if f.Note != "" {
			title += "\n" + f.Note
		}
		c.Shapes = append(c.Shapes, shape{X: x, Y: top, W: w, H: h, Class: "fault", Fill: faultColour(kind), Title: title})
		if w > 7*float64(len(kind)) {
			c.Labels = append(c.Labels, label{X: x + 4, Y: top + rowH - 5, Class: "fault-name", Anchor: "start", Text: kind})
		}
	}
}

func faultColour(kind string) string {
	if col, ok := faultColours[kind]; ok {
		return col
	}
	return "#999999"
}

// keyLanes draws a lane per key: its holds (a row for each that another
// overlaps), the overlaps in red, the writes.
func (c *canvas) keyLanes(r *run) {
	byKey := map[string][]*hold{}
	for i := range r.holds {
		byKey[r.holds[i].key] = append(byKey[r.holds[i].key], &r.holds[i])
	}
	writes := map[string][]Record{}
	for _, w := range r.writes {
		writes[w.Key] = append(writes[w.Key], w)
		if byKey[w.Key] == nil {
			byKey[w.Key] = nil
		}
	}
	if len(byKey) == 0 {
		return
	}
	c.heading("holds by key")
	for _, key := range sorted(byKey) {
		hs := byKey[key]
		slices.SortStableFunc(hs, func(a, b *hold) int { return a.start.Compare(b.start) })
		rows := c.rows(hs)
		n := 1
		for _, row := range rows {
			n = max(n, row+1)
		}
		top := c.lane(key, n, fmt.Sprintf(": %d holds", len(hs)))
		for i, h := range hs {
			c.hold(h, top+float64(rows[i])*rowH)
		}
		c.overlapsOf(r, key, top, float64(n)*rowH)
		c.writes(writes[key], top, float64(n)*rowH)
	}
}

// rows places each hold (sorted by start) in the first row free at its
// start; a lost hold keeps its row until Until, where it is drawn faint.
func (c *canvas) rows(hs []*hold) []int {
	var free []time.Time // per row: when its last hold's drawing ends
	out := make([]int, len(hs))
	for i, h := range hs {
		end := h.end
		if h.lost && h.until.After(end) {
			end = h.until
		}
		row := slices.IndexFunc(free, func(t time.Time) bool { return !t.After(h.start) })
		if row < 0 {
			row, free = len(free), append(free, time.Time{})
		}
		free[row], out[i] = end, row
	}
	return out
}

// hold draws one hold at y: its bar, the faint stretch from the loss signal
// to Until, its token.
func (c *canvas) hold(h *hold, y float64) {
	col := c.colour(h.client)
	x, w := c.span(h.start, h.end, 1)
	class, ended := "hold", "released"
	switch {
	case h.lost:
		class, ended = "hold lost", "loss signalled"
	case h.open:
		class, ended = "hold open", "still held at the end of the history"
	}
	if h.shared {
		class += " shared"
	}
	title := fmt.Sprintf("%s holds %s, token %d\ngranted %s, %s %s (held %v)", h.client, h.key, h.token,
		c.ms(h.start), ended, c.ms(h.end), h.end.Sub(h.start).Round(time.Microsecond))
	if !h.until.IsZero() {
		title += fmt.Sprintf("\nUntil %s (%v after it ended)", c.ms(h.until), h.until.Sub(h.end).Round(time.Microsecond))
	}
	if h.note != "" {
		title += "\n" + h.note
	}
	if h.lost && h.until.After(h.end) {
		fx, fw := c.span(h.end, h.until, 1)
		c.Shapes = append(c.Shapes, shape{X: fx, Y: y + 2, W: fw, H: rowH - 4, Class: "after-loss", Fill: col,
			Title: fmt.Sprintf("%s: lease of token %d after the loss signal, until Until", h.client, h.token)})
	}
	c.Shapes = append(c.Shapes, shape{X: x, Y: y + 2, W: w, H: rowH - 4, Class: class, Fill: col, Title: title})
	if text := fitToken(h.token, w); text != "" {
		c.Labels = append(c.Labels, label{X: x + w/2, Y: y + rowH - 6, Class: "token", Anchor: "middle", Text: text})
	}
}

// fitToken returns token as a label for a bar w pixels wide: whole if it
// fits, else its last digits after "…" (they tell neighbours apart; the
// whole token is on hover), or nothing on a bar too narrow.
func fitToken(token int64, w float64) string {
	s := fmt.Sprint(token)
	fits := int((w - 4) / tokenCharW)
	switch {
	case fits >= len(s):
		return s
	case fits < 3:
		return ""
	}
	return "…" + s[len(s)-(fits-1):]
}

// overlapsOf draws key's overlaps in red over the whole lane.
func (c *canvas) overlapsOf(r *run, key string, top, h float64) {
	for _, o := range r.overlaps {
		if o.key != key {
			continue
		}
		x, w := c.span(o.start, o.end, 3)
		c.Shapes = append(c.Shapes, shape{X: x, Y: top, W: w, H: h, Class: "overlap",
			Title: fmt.Sprintf("OVERLAP of %s for %v: %s (token %d) and %s (token %d) held it at once",
				key, o.end.Sub(o.start).Round(time.Microsecond), o.a.client, o.a.token, o.b.client, o.b.token)})
	}
}

// writes draws a key's fenced writes: a tick for an accepted one, a red
// mark across the lane for one refused as stale.
func (c *canvas) writes(ws []Record, top, h float64) {
	for _, w := range ws {
		x := c.x(w.Time)
		if w.Refused {
			c.Shapes = append(c.Shapes, shape{X: x - 1.5, Y: top - 2, W: 3, H: h + 4, Class: "write refused",
				Title: fmt.Sprintf("STALE WRITE REFUSED at %s: %swrote %s with token %d, the store had %d", c.ms(w.Time), who(w.Client), w.Key, w.Token, w.Seen)})
			continue
		}
		c.Shapes = append(c.Shapes, shape{X: x - 0.5, Y: top + h - 5, W: 1, H: 5, Class: "write",
			Title: fmt.Sprintf("write accepted at %s: %swrote %s with token %d%s", c.ms(w.Time), who(w.Client), w.Key, w.Token, noteOf(w.Note))})
	}
}

// who names a writer, if known, before "wrote".
func who(client string) string {
	if client == "" {
		return ""
	}
	return client + " "
}

func noteOf(note string) string {
	if note == "" {
		return ""
	}
	return "\n" + note
}

// legend lists the fault kinds drawn (in a fixed order, then others).
func (c *canvas) legend(r *run) {
	const shown = 16
	if len(c.Clients) > shown {
		c.More, c.Clients = len(c.Clients)-shown, c.Clients[:shown]
	}
	seen := map[string]bool{}
	for _, f := range r.faults {
		seen[f.Fault] = true
	}
	for _, k := range append(slices.Clone(faultOrder), sorted(seen)...) {
		if seen[k] {
			delete(seen, k)
			c.Faults = append(c.Faults, swatch{Class: "fault", Fill: faultColour(k), Name: k})
		}
	}
}

func summary(r *run) string {
	keys, clients := map[string]bool{}, map[string]bool{}
	for _, h := range r.holds {
		keys[h.key], clients[h.client] = true, true
	}
	parts := []string{
		fmt.Sprintf("%v", r.to.Sub(r.from).Round(time.Millisecond)),
		fmt.Sprintf("%d holds of %d keys by %d clients", len(r.holds), len(keys), len(clients)),
		fmt.Sprintf("%d faults", len(r.faults)),
		fmt.Sprintf("%d overlaps", len(r.overlaps)),
		fmt.Sprintf("%d fenced writes, %d refused as stale", len(r.writes), r.refused),
	}
	if r.unmatched > 0 {
		parts = append(parts, fmt.Sprintf("%d releases or losses without their grant", r.unmatched))
	}
	if !r.from.IsZero() {
		parts = append(parts, "from "+r.from.UTC().Format("2006-01-02 15:04:05.000 UTC"))
	}
	return strings.Join(parts, " · ")
}

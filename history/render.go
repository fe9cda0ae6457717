package history

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// Geometry of the picture, in SVG pixels.
const (
	labelW     = 190.0 // the lanes' names
	rightPad   = 24.0
	axisH      = 30.0
	rowH       = 18.0 // one row of a lane; a lane has a row per holds held at once
	laneGap    = 5.0
	headH      = 26.0 // a section's heading
	minPlotW   = 1100.0
	maxPlotW   = 40000.0
	pxPerSec   = 220.0
	tokenCharW = 6.2 // width of a digit of a token label
)

// Colours: clients take the palette in order of first appearance; red is
// kept for what went wrong (overlaps, refused stale writes).
var (
	palette = []string{"#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#8c564b",
		"#e377c2", "#636363", "#bcbd22", "#393b79", "#637939", "#7b4173", "#3182bd", "#31a354", "#6b6ecf"}
	faultColours = map[string]string{
		FaultKill: "#4d4d4d", FaultRestartEmpty: "#9e5fd0", FaultRestart: "#c5b0d5", FaultFreeze: "#4a90d9",
		FaultLatency: "#f5a623", FaultPartition: "#a0522d", FaultClockSkew: "#16a79d",
	}
	faultOrder = []string{FaultKill, FaultRestartEmpty, FaultRestart, FaultFreeze, FaultLatency, FaultPartition, FaultClockSkew}
)

//go:embed page.html.tmpl
var pageText string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"n": func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
}).Parse(pageText))

// A shape is one rectangle of the picture; Title is shown on hover.
type shape struct {
	X, Y, W, H  float64
	Class, Fill string
	Title       string
}

// A label is one text of the picture.
type label struct {
	X, Y   float64
	Class  string
	Anchor string
	Text   string
}

// A swatch is one entry of the legend.
type swatch struct {
	Class, Fill, Name string
}

// A picture is what the page template draws.
type picture struct {
	Title, Summary string
	W, H           float64
	NamesW, PlotW  float64 // the names' column and the plot, which scrolls
	Grid           []shape // the axis' tick lines
	Lanes          []shape // lane backgrounds
	Shapes         []shape
	Names          []label // headings and lanes' names, in a column that does not scroll
	Labels         []label
	Clients        []swatch
	More           int // clients left out of the legend
	Faults         []swatch
}

// Render writes a self-contained HTML page (inline SVG and CSS, no script,
// nothing fetched) that draws recs: a lane per node with its faults, a lane
// per key with its holds, overlaps and refused stale writes in red, details
// on hover. recs need not be sorted.
func Render(w io.Writer, recs []Record) error {
	r := assemble(recs)
	p := draw(r)
	if err := page.Execute(w, p); err != nil {
		return fmt.Errorf("history: rendering: %w", err)
	}
	return nil
}

// A canvas maps the run's instants to x and collects what is drawn.
type canvas struct {
	*picture
	from    time.Time
	scale   float64 // pixels per second
	y       float64 // top of the next lane
	colours map[string]string
}

func (c *canvas) x(t time.Time) float64 { return labelW + t.Sub(c.from).Seconds()*c.scale }

// span returns the x and width of [a, b), at least minW wide.
func (c *canvas) span(a, b time.Time, minW float64) (float64, float64) {
	x := c.x(a)
	return x, max(c.x(b)-x, minW)
}

func draw(r *run) *picture {
	secs := max(r.to.Sub(r.from).Seconds(), 0.001)
	plotW := min(max(secs*pxPerSec, minPlotW), maxPlotW)
	c := &canvas{picture: &picture{Title: r.title}, from: r.from, scale: plotW / secs, y: axisH,
		colours: map[string]string{}}
	if c.Title == "" {
		c.Title = "quorumlock history"
	}
	c.W, c.NamesW, c.PlotW = labelW+plotW+rightPad, labelW, plotW+rightPad
	c.nodeLanes(r)
	c.keyLanes(r)
	c.H = c.y + laneGap
	c.axis(secs)
	c.legend(r)
	c.Summary = summary(r)
	return c.picture
}

// axis draws a tick line with its offset about every 100 pixels.
func (c *canvas) axis(secs float64) {
	step := niceStep(secs / max(1, (c.W-labelW)/100))
	for t := 0.0; t <= secs+step/1000; t += step {
		x := labelW + t*c.scale
		c.Grid = append(c.Grid, shape{X: x, Y: axisH - 6, W: 1, H: c.H - axisH + 6, Class: "grid"})
		anchor := "middle"
		if t == 0 {
			anchor = "start" // not cut by the names' column
		}
		c.Labels = append(c.Labels, label{X: x, Y: axisH - 10, Class: "tick", Anchor: anchor, Text: fmtOffset(t, step)})
	}
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= d {
			return m * p
		}
	}
	return 10 * p
}

func fmtOffset(t, step float64) string {
	switch {
	case step >= 1:
		return fmt.Sprintf("%gs", math.Round(t))
	case step >= 0.1:
		return fmt.Sprintf("%.1fs", t)
	case step >= 0.01:
		return fmt.Sprintf("%.2fs", t)
	}
	return fmt.Sprintf("%.0fms", t*1000)
}

// heading starts a section of lanes.
func (c *canvas) heading(text string) {
	c.y += 6
	c.Names = append(c.Names, label{X: 8, Y: c.y + headH - 10, Class: "heading", Anchor: "start", Text: text})
	c.y += headH
}

// lane draws a lane's background and name for rows rows and returns its top.
func (c *canvas) lane(name string, rows int, note string) float64 {
	top, h := c.y, float64(rows)*rowH
	c.Lanes = append(c.Lanes, shape{X: 0, Y: top, W: c.W, H: h, Class: "lane", Title: name + note})
	c.Names = append(c.Names, label{X: labelW - 8, Y: top + h/2 + 4, Class: "lane-name", Anchor: "end", Text: clip(name, 28)})
	c.y += h + laneGap
	return top
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (c *canvas) colour(client string) string {
	if col, ok := c.colours[client]; ok {
		return col
	}
	col := palette[len(c.colours)%len(palette)]
	c.colours[client] = col
	c.Clients = append(c.Clients, swatch{Class: "hold", Fill: col, Name: client})
	return col
}

// ms formats an instant as its offset from the run's start.
func (c *canvas) ms(t time.Time) string {
	return fmt.Sprintf("%.3fs", t.Sub(c.from).Seconds())
}

func sorted[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

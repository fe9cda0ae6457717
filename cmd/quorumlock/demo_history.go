package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/seed818c56a1/quorumlock/history"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// A demoHistory records the demo's holds and faults (demo --report): the
// history file beside the page, written as the demo runs, then drawn. A nil
// *demoHistory records nothing.
type demoHistory struct {
	page, path string // the page's and the history's files
	file       *os.File
	w          *history.Writer
	obs        *history.Observer
}

// openDemoHistory creates the history file of the page at page: page with
// its extension replaced by .jsonl.
func openDemoHistory(page string) (*demoHistory, error) {
	page, err := filepath.Abs(page)
	if err != nil {
		return nil, err
	}
	path := history.HistoryPath(page)
	if path == page {
		return nil, fmt.Errorf("--report %s: the page must not end in .jsonl, the history's name", page)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := history.NewWriter(f)
	return &demoHistory{page: page, path: path, file: f, w: w, obs: history.NewObserver(w, "buyer")}, nil
}

// as returns the options that record the holds of one call as client's.
func (h *demoHistory) as(client string) []redlock.Option {
	if h == nil {
		return nil
	}
	return []redlock.Option{redlock.WithObserver(h.obs.As(client))}
}

// finish waits for every recorded lock to end, writes the run and its
// faults, and draws the page. It returns the page's path.
func (h *demoHistory) finish(d *demoRun) error {
	h.obs.Wait()
	nodes := make([]string, len(d.addrs()))
	for i, a := range d.addrs() {
		nodes[i] = nodeName(i, a)
	}
	h.w.Write(history.Record{Type: history.TypeRun, Time: d.start, End: d.ended, Title: "quorumlock demo: " + d.key, Nodes: nodes})
	for _, f := range d.faults.records(d) {
		h.w.Write(f)
	}
	if err := h.w.Err(); err != nil {
		h.file.Close()
		return err
	}
	if err := h.file.Close(); err != nil {
		return err
	}
	return history.RenderFile(h.path, h.page)
}

// nodeName names master i as the demo's progress lines and the library's
// errors do: numbered from 0, in the order of --nodes.
func nodeName(i int, addr string) string { return fmt.Sprintf("node %d (%s)", i, redactAddr(addr)) }

// records returns the faults that happened as history records: the kill
// of a node until its restart, and the restart, empty, for the restart
// guard that the node then sits out (the lease, at the demo's TTL).
func (s *demoFaults) records(d *demoRun) []history.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killedAt == 0 {
		return nil
	}
	node := nodeName(killedNode, d.addrs()[killedNode])
	killed, restarted := d.start.Add(s.killedAt), d.ended
	if s.restartedAt != 0 {
		restarted = d.start.Add(s.restartedAt)
	}
	out := []history.Record{{Type: history.TypeFault, Time: killed, End: restarted, Node: node, Fault: history.FaultKill,
		Note: "SIGKILL: connections refused"}}
	if s.restartedAt != 0 && s.restartErr == nil {
		out = append(out, history.Record{Type: history.TypeFault, Time: restarted, End: restarted.Add(d.ttl), Node: node,
			Fault: history.FaultRestartEmpty, Note: "back without its data: its grants do not count during the restart guard"})
	}
	return out
}

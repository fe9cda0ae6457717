package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The record types of a history (Record.Type).
const (
	TypeRun     = "run"     // the run itself: Title, Nodes, Time (its start), End
	TypeGrant   = "grant"   // a lock obtained: Client, Key, Token, Until, Shared
	TypeRelease = "release" // a hold ended by its holder (Unlock): Client, Key, Token, Until
	TypeLoss    = "loss"    // a hold whose loss was signalled (Done with ErrLockLost or ErrClosed)
	TypeFault   = "fault"   // a fault on Node (all nodes when empty): Fault, Time to End, Note
	TypeWrite   = "write"   // a fenced write: Client, Key, Token, Refused, Seen
)

// The fault kinds the report draws each in its own colour (Record.Fault).
// Any other kind is drawn too, in grey.
const (
	FaultKill         = "kill"          // the process is gone: connections refused
	FaultRestartEmpty = "restart-empty" // back as a new process without its data
	FaultRestart      = "restart"       // back from its persistence files
	FaultFreeze       = "freeze"        // SIGSTOP or a blackhole: calls time out
	FaultLatency      = "latency"       // replies delayed
	FaultPartition    = "partition"     // some clients cannot reach it, or replies are lost
	FaultClockSkew    = "clock-skew"    // its clock runs at another rate
)

// A Record is one line of a history file: a JSON object whose "type" says
// which of the other fields it uses (the Type constants name them); fields
// a type does not use are left out, unknown ones ignored by Read. Times
// are wall-clock instants (RFC 3339 with nanoseconds in JSON); the report
// draws them as offsets from the run's start.
type Record struct {
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`             // when it happened; a fault's start
	End     time.Time `json:"end,omitzero"`     // a fault's end (healed), the run's end
	Until   time.Time `json:"until,omitzero"`   // a lock's end of validity (Lock.Until) when recorded
	Client  string    `json:"client,omitempty"` // who held or wrote
	Key     string    `json:"key,omitempty"`
	Token   int64     `json:"token,omitempty"`   // the key's fencing token
	Shared  bool      `json:"shared,omitempty"`  // a reader's hold (RLock): readers may overlap
	Node    string    `json:"node,omitempty"`    // the node a fault hit
	Fault   string    `json:"fault,omitempty"`   // the fault's kind (FaultKill, …)
	Refused bool      `json:"refused,omitempty"` // a write refused as stale
	Seen    int64     `json:"seen,omitempty"`    // the larger token that refused it
	Title   string    `json:"title,omitempty"`   // the run's name
	Nodes   []string  `json:"nodes,omitempty"`   // the run's nodes, one lane each
	Note    string    `json:"note,omitempty"`    // free text, shown on hover
}

// A Writer appends records to a history, one JSON object per line. It is
// safe for concurrent use; the first error sticks and is returned by every
// later Write and by Err.
type Writer struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// NewWriter returns a Writer that appends to w. It does not buffer: each
// record is one Write call on w.
func NewWriter(w io.Writer) *Writer { return &Writer{enc: json.NewEncoder(w)} }

// Write appends r. A record without Type or Time is refused with an error
// and not written; it does not stick.
func (w *Writer) Write(r Record) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.enc.Encode(r)
	}
	return w.err
}

// Err returns the first error that writing met, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (r *Record) check() error {
	switch {
	case r.Type == "":
		return errors.New("a record without type")
	case r.Time.IsZero():
		return fmt.Errorf("a %s record without time", r.Type)
	}
	return nil
}

// maxLine bounds one line of a history file.
const maxLine = 1 << 20

// Read reads a history file: one JSON object per line, blank lines
// skipped. Fields it does not know are ignored, so that older readers draw
// newer files. It fails on the first line that is not a record, naming it.
func Read(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", n, err)
		}
		if err := rec.check(); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", n, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return out, nil
}

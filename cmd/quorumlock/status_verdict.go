package main

import (
	"encoding/json"
	"fmt"
)

// A tristate is whether a majority holds a lock: yes, no, or unknown when
// no majority of nodes answered. JSON: true, false or "unknown".
type tristate int8

const (
	no tristate = iota
	yes
	unknown
)

func (s tristate) MarshalJSON() ([]byte, error) {
	switch s {
	case yes:
		return []byte("true"), nil
	case unknown:
		return []byte(`"unknown"`), nil
	}
	return []byte("false"), nil
}

func (s *tristate) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*s = yes
	case "false":
		*s = no
	case `"unknown"`:
		*s = unknown
	default:
		return fmt.Errorf("held: want true, false or \"unknown\", not %s", b)
	}
	return nil
}

// A count is a number of holders, or unknown when no majority of nodes
// answered. JSON: a number or "unknown".
type count struct {
	n     int
	known bool
}

func (c count) MarshalJSON() ([]byte, error) {
	if !c.known {
		return []byte(`"unknown"`), nil
	}
	return json.Marshal(c.n)
}

func (c *count) UnmarshalJSON(b []byte) error {
	if string(b) == `"unknown"` {
		*c = count{}
		return nil
	}
	c.known = true
	return json.Unmarshal(b, &c.n)
}

func (c count) String() string {
	if !c.known {
		return "unknown"
	}
	return fmt.Sprint(c.n)
}

// The states of a lock over the nodes, as status reports them.
const (
	stateHeld    = "held"     // a writer (or a permit's holder) on a majority
	stateShared  = "shared"   // no writer, readers on a majority
	statePartial = "not held" // a holder on a minority only
	stateFree    = "free"     // no node holds it
	stateUnknown = "unknown"  // no majority answered, and none holds it
)

package redlock

import "slices"

// A nodeSet is a snapshot of a set of nodes: a bit each for the first 64,
// and beyond them a copy of the set — so that an Unlock's snapshot of a
// few nodes allocates nothing (issue 26).
type nodeSet struct {
	mask uint64
	more []bool // the whole set, when it has more than 64 nodes
}

// newNodeSet returns the snapshot of in, nodes n where in[n].
func newNodeSet(in []bool) nodeSet {
	if len(in) > 64 {
		return nodeSet{more: slices.Clone(in)}
	}
	var s nodeSet
	for n, ok := range in {
		if ok {
			s.mask |= 1 << n
		}
	}
	return s
}

// has reports whether n is in s.
func (s nodeSet) has(n int) bool {
	if s.more != nil {
		return s.more[n]
	}
	return n < 64 && s.mask&(1<<n) != 0
}

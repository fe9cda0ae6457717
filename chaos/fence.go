package chaos

import "sync"

// A FencedStore stands for the resource a lock guards: it accepts a write
// only if its fencing token is at least as large as every token it has seen
// for that key, so a holder that was paused past its validity cannot
// overwrite the work of the holder that came after it.
//
// A FencedStore is safe for concurrent use; its zero value is empty and ready.
type FencedStore struct {
	mu       sync.Mutex
	highest  map[string]int64
	accepted int
	rejected int
}

// Write offers a write to key under token and reports whether it was
// accepted.
func (s *FencedStore) Write(key string, token int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.highest == nil {
		s.highest = map[string]int64{}
	}
	if top, seen := s.highest[key]; seen && token < top {
		s.rejected++
		return false
	}
	s.highest[key] = token
	s.accepted++
	return true
}

// Counts returns how many writes were accepted and rejected so far.
func (s *FencedStore) Counts() (accepted, rejected int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted, s.rejected
}

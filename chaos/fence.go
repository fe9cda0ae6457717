package chaos

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/fence"
)

// A FencedStore stands for the resource a lock guards: it accepts a write
// only if its fencing token is at least as large as every token it has
// accepted for that key, so a holder that was paused past its validity
// cannot overwrite the work of the holder that came after it.
//
// Its zero value keeps the tokens in memory. NewFencedStore makes one that
// writes through a fence.Redis — a store on a Redis server apart from the
// lock's masters, which checks the tokens itself — and records every write
// on a clock, for CheckWrites to verify that the server never accepted a
// stale one.
//
// A FencedStore is safe for concurrent use.
type FencedStore struct {
	store *fence.Redis         // nil: in memory
	now   func() time.Duration // the clock of Write.Start and End; nil: 0

	mu       sync.Mutex
	highest  map[string]int64 // in memory
	accepted int
	rejected int
	writes   []Write
}

// A Write is one write offered to a FencedStore, as its writer saw it.
type Write struct {
	Key   string
	Token int64
	// Start and End bound the write: when it was sent, when its answer
	// came, on the clock given to NewFencedStore.
	Start, End time.Duration
	Accepted   bool
	Refused    bool  // refused as stale; Seen is the larger token the store had
	Seen       int64 // for a refused write
	Err        error // neither accepted nor refused: the write may or may not have landed
}

// writeTimeout bounds each write through the store, whose server no fault
// touches.
const writeTimeout = 10 * time.Second

// NewFencedStore returns a FencedStore that writes through store, recording
// every write with times read from now (a Recorder's Now).
func NewFencedStore(store *fence.Redis, now func() time.Duration) *FencedStore {
	return &FencedStore{store: store, now: now}
}

// Write offers a write to key under token and reports whether it was
// accepted. Through a fence.Redis, the value written is the writer's
// token, and a write that failed (neither accepted nor refused) reports
// false and is kept in Writes with its error.
func (s *FencedStore) Write(key string, token int64) bool {
	w := Write{Key: key, Token: token, Start: s.clock()}
	if s.store != nil {
		s.through(&w)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store == nil {
		s.inMemory(&w)
	}
	w.End = s.clock()
	switch {
	case w.Accepted:
		s.accepted++
	case w.Refused:
		s.rejected++
	}
	s.writes = append(s.writes, w)
	return w.Accepted
}

// through makes w through the fence.Redis.
func (s *FencedStore) through(w *Write) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	err := s.store.Set(ctx, w.Key, formatToken(w.Token), w.Token)
	var stale *fence.StaleError
	switch {
	case err == nil:
		w.Accepted = true
	case errors.As(err, &stale):
		w.Refused, w.Seen = true, stale.Seen
	default:
		w.Err = err
	}
}

// inMemory makes w against the tokens in memory; s.mu is held.
func (s *FencedStore) inMemory(w *Write) {
	if s.highest == nil {
		s.highest = map[string]int64{}
	}
	if top, seen := s.highest[w.Key]; seen && w.Token < top {
		w.Refused, w.Seen = true, top
		return
	}
	s.highest[w.Key] = w.Token
	w.Accepted = true
}

func (s *FencedStore) clock() time.Duration {
	if s.now == nil {
		return 0
	}
	return s.now()
}

// Counts returns how many writes were accepted and rejected (as stale) so
// far; failed writes count as neither.
func (s *FencedStore) Counts() (accepted, rejected int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted, s.rejected
}

// Writes returns a copy of the writes offered so far, in the order their
// answers came; never nil.
func (s *FencedStore) Writes() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Write{}, s.writes...)
}

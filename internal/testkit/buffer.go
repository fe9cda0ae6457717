package testkit

import (
	"bytes"
	"sync"
)

// A Buffer is a bytes.Buffer safe for concurrent use: a process or a logger
// writes it while the test reads it. Its zero value is an empty buffer; it
// must not be copied after first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

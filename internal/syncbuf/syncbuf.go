// Package syncbuf has a buffer that one goroutine may write while another
// reads it: tests read what a server or command logs while it runs.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose Write and String may be called concurrently.
// The zero value is an empty buffer ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

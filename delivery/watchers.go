package delivery

import (
	"sync"
	"sync/atomic"
)

// Watchers implements Store.Watch for a store that learns of changes in one
// place: it calls Notify there and answers Watch with Watchers.Watch. The
// zero value is ready to use; it is safe for concurrent use, and Notify never
// waits for a lock.
type Watchers struct {
	mu   sync.Mutex
	list atomic.Pointer[[]watcher] // replaced whole, read without a lock
	next int
}

type watcher struct {
	id int
	fn func(Record)
}

// Watch calls fn with every record given to Notify, until stop is called.
func (w *Watchers) Watch(fn func(Record)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	id := w.next
	var ws []watcher
	if p := w.list.Load(); p != nil {
		ws = append(ws, *p...)
	}
	ws = append(ws, watcher{id, fn})
	w.list.Store(&ws)
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		var ws []watcher
		for _, x := range *w.list.Load() {
			if x.id != id {
				ws = append(ws, x)
			}
		}
		w.list.Store(&ws)
	}
}

// Active reports whether anyone watches, so that a store can skip building
// records nobody reads.
func (w *Watchers) Active() bool {
	p := w.list.Load()
	return p != nil && len(*p) > 0
}

// Notify calls every watcher's fn with rec, on the caller's goroutine.
func (w *Watchers) Notify(rec Record) {
	if p := w.list.Load(); p != nil {
		for _, x := range *p {
			x.fn(rec)
		}
	}
}

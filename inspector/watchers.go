package inspector

import (
	"sync"
	"sync/atomic"
)

// Watchers implements Source.Watch for a Source whose store reports changes
// through one callback (as the inbox's Options.OnChange does): the adapter
// passes that callback Notify and answers Watch with Watchers.Watch. The zero
// value is ready to use; it is safe for concurrent use, and Notify never
// blocks on a lock.
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

// Notify calls every watcher's fn with rec, on the caller's goroutine.
func (w *Watchers) Notify(rec Record) {
	if p := w.list.Load(); p != nil {
		for _, x := range *p {
			x.fn(rec)
		}
	}
}

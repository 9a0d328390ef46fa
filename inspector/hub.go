package inspector

import (
	"sync"
	"sync/atomic"
)

// clientBuffer is how many messages a browser may lag behind before it is
// dropped; maxClients is how many pages may listen at once. Together they
// bound the fan-out's memory: maxClients × clientBuffer messages.
const (
	clientBuffer = 256
	maxClients   = 64
)

// hub fans messages out to the live pages. Publishing never blocks: a client
// whose buffer is full is dropped (its page reconnects and reloads the list),
// so that a slow or stuck browser cannot slow the receiver.
type hub struct {
	mu      sync.Mutex
	clients map[*client]struct{}
	closed  bool

	drops     atomic.Int64 // clients dropped for lagging
	published atomic.Int64 // messages published
}

// client is one page's stream. gone is closed when the hub drops it or
// closes.
type client struct {
	ch   chan []byte
	gone chan struct{}
}

// subscribe adds a client; ok is false once the hub is closed or has
// maxClients.
func (h *hub) subscribe() (c *client, ok bool) {
	c = &client{ch: make(chan []byte, clientBuffer), gone: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.clients) >= maxClients {
		return nil, false
	}
	if h.clients == nil {
		h.clients = map[*client]struct{}{}
	}
	h.clients[c] = struct{}{}
	return c, true
}

// unsubscribe removes c, if the hub still has it.
func (h *hub) unsubscribe(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c.gone)
	}
}

// active reports whether any client listens, so that a publisher can skip
// encoding a message nobody reads.
func (h *hub) active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients) > 0
}

// count returns how many clients listen.
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// publish gives msg to every client without waiting for any.
func (h *hub) publish(msg []byte) {
	h.published.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		select {
		case c.ch <- msg:
		default:
			delete(h.clients, c)
			close(c.gone)
			h.drops.Add(1)
		}
	}
}

// close ends every client's stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for c := range h.clients {
		delete(h.clients, c)
		close(c.gone)
	}
}

package inspector

import (
	"sync"
	"testing"
)

// TestHubDropsStuckClients publishes far more messages than a client buffers
// to clients that never read: publish must return every time (the test would
// hang otherwise), every stuck client is dropped exactly once, and a client
// that keeps up gets every message.
func TestHubDropsStuckClients(t *testing.T) {
	t.Parallel()
	var h hub
	const stuck, msgs = 8, 20 * clientBuffer
	var stuckClients []*client
	for range stuck {
		c, ok := h.subscribe()
		if !ok {
			t.Fatal("subscribe refused")
		}
		stuckClients = append(stuckClients, c)
	}
	reader, _ := h.subscribe()
	var got int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-reader.ch:
				got++
				if got == msgs {
					return
				}
			case <-reader.gone:
				return
			}
		}
	})
	msg := []byte(`{"key":"d:x"}`)
	for i := range msgs {
		h.publish(msg)
		// Keep pace with the reader, so that only the stuck ones lag: a
		// reader slower than clientBuffer messages would rightly be dropped.
		for len(reader.ch) > clientBuffer/2 {
			select {
			case <-reader.gone:
				t.Fatalf("the reading client was dropped at message %d", i)
			default:
			}
		}
	}
	wg.Wait()
	if got != msgs {
		t.Errorf("the reading client got %d of %d messages", got, msgs)
	}
	if d := h.drops.Load(); d != stuck {
		t.Errorf("%d clients dropped, want %d", d, stuck)
	}
	for i, c := range stuckClients {
		select {
		case <-c.gone:
		default:
			t.Errorf("stuck client %d not dropped", i)
		}
		if len(c.ch) != clientBuffer {
			t.Errorf("stuck client %d holds %d messages, want its buffer's %d", i, len(c.ch), clientBuffer)
		}
		h.unsubscribe(c) // after a drop: a no-op, not a double close
	}
	if n := h.count(); n != 1 {
		t.Errorf("%d clients left, want the reader", n)
	}
	h.close()
	if _, ok := h.subscribe(); ok {
		t.Error("subscribe after close succeeded")
	}
	h.publish(msg) // no client: nothing to do, no panic
}

func TestHubMaxClients(t *testing.T) {
	t.Parallel()
	var h hub
	var cs []*client
	for range maxClients {
		c, ok := h.subscribe()
		if !ok {
			t.Fatalf("refused client %d of %d", len(cs)+1, maxClients)
		}
		cs = append(cs, c)
	}
	if _, ok := h.subscribe(); ok {
		t.Fatal("a client past maxClients was taken")
	}
	h.unsubscribe(cs[0])
	if _, ok := h.subscribe(); !ok {
		t.Fatal("no room after one left")
	}
}

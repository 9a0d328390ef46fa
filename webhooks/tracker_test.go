package webhooks

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTracker: take counts deliveries and bytes within the bounds (a delivery
// alone passes the byte bound), finish ends any of them in any order, running
// lists the ids still counted, and close refuses more and tells when the last
// one ends.
func TestTracker(t *testing.T) {
	var tr tracker
	a, err := tr.take("a", 600, 3, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.take("b", 600, 3, 1000); err != errBusy {
		t.Errorf("past the byte bound: %v", err)
	}
	b, _ := tr.take("b", 300, 3, 1000)
	c, _ := tr.take("c", 0, 3, 1000)
	if _, err := tr.take("d", 0, 3, 1000); err != errBusy {
		t.Errorf("past the count: %v", err)
	}
	if n, bytes := tr.load(); n != 3 || bytes != 900 {
		t.Errorf("load = %d, %d", n, bytes)
	}
	tr.finish(b) // from the middle
	ids := tr.running()
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a", "c"}) {
		t.Errorf("running = %q", ids)
	}
	idle := tr.close()
	if _, err := tr.take("e", 1, 0, 0); err != errClosedTracker {
		t.Errorf("after close: %v", err)
	}
	tr.finish(a)
	select {
	case <-idle:
		t.Fatal("idle with one delivery left")
	default:
	}
	tr.finish(c)
	<-idle
	if n, bytes := tr.load(); n != 0 || bytes != 0 || len(tr.running()) != 0 {
		t.Errorf("after all finished: %d, %d, running %q", n, bytes, tr.running())
	}
	var alone tracker
	if f, err := alone.take("big", 5000, 0, 1000); err != nil {
		t.Errorf("a delivery alone over the byte bound: %v", err)
	} else {
		alone.finish(f)
	}
}

// TestTrackerConcurrent: goroutines take and finish at once, and neither
// bound is ever passed (each delivery checks the counts it sees after its own
// take); close, meanwhile, tells of idle only once every counted delivery
// has finished, and none is counted after.
func TestTrackerConcurrent(t *testing.T) {
	const maxN, maxBytes, size = 5, 3000, 1000
	var tr tracker
	var wg sync.WaitGroup
	var taken, after atomic.Int64
	var closed atomic.Bool
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				wasClosed := closed.Load()
				f, err := tr.take("d", size, maxN, maxBytes)
				if err != nil {
					continue
				}
				if wasClosed {
					after.Add(1)
				}
				taken.Add(1)
				if n, b := tr.load(); n > maxN || b > maxBytes {
					t.Errorf("load %d, %d past the bounds %d, %d", n, b, maxN, maxBytes)
				}
				tr.finish(f)
			}
		}()
	}
	for taken.Load() < 100 {
		runtime.Gosched()
	}
	idle := tr.close()
	closed.Store(true)
	<-idle
	if n, _ := tr.load(); n != 0 {
		t.Errorf("idle with %d counted", n)
	}
	wg.Wait()
	if n, b := tr.load(); n != 0 || b != 0 || after.Load() != 0 {
		t.Errorf("after all: %d, %d, %d taken after close", n, b, after.Load())
	}
}

package webhooks

import (
	"slices"
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
	if n, bytes := tr.load(); n != 0 || bytes != 0 || tr.head != nil {
		t.Errorf("after all finished: %d, %d, head %v", n, bytes, tr.head)
	}
	var alone tracker
	if f, err := alone.take("big", 5000, 0, 1000); err != nil {
		t.Errorf("a delivery alone over the byte bound: %v", err)
	} else {
		alone.finish(f)
	}
}

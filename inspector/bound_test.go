package inspector

import (
	"math"
	"testing"
)

// TestBoundRule: zero is the documented default, a negative value no bound,
// in the Ring's options and the Inspector's.
func TestBoundRule(t *testing.T) {
	t.Parallel()
	r := NewRing(RingOptions{MaxRecords: -1})
	if r.opts.MaxRecords != math.MaxInt || r.opts.MaxBytes != DefaultMaxBytes {
		t.Errorf("NewRing: MaxRecords %d, MaxBytes %d", r.opts.MaxRecords, r.opts.MaxBytes)
	}
	in := New(Options{MaxPayloadLoads: -1, MaxRejected: -1})
	if in.loads != nil || in.opts.MaxRejected != math.MaxInt {
		t.Errorf("New: loads %v, MaxRejected %d", in.loads, in.opts.MaxRejected)
	}
	if in = New(Options{}); cap(in.loads) != DefaultMaxPayloadLoads || in.opts.MaxRejected != DefaultMaxRejected {
		t.Errorf("New: %d loads, MaxRejected %d", cap(in.loads), in.opts.MaxRejected)
	}
}

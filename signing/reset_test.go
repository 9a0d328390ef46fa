package signing

import "testing"

// TestDigestReset: after Reset a Digest signs what is written next as a fresh
// one does, with the same key.
func TestDigestReset(t *testing.T) {
	d, err := NewDigest("k")
	if err != nil {
		t.Fatal(err)
	}
	d.Write([]byte(`{"first":1}`))
	d.Signature()
	d.Reset()
	d.Write([]byte(`{"second":2}`))
	want, _ := Sign("k", []byte(`{"second":2}`))
	if got := d.Signature(); got != want {
		t.Errorf("after Reset: %s, want %s", got, want)
	}
	if !d.Match(want) {
		t.Error("Match after Reset is false")
	}
}

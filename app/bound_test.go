package app

import (
	"crypto/rand"
	"crypto/rsa"
	"math"
	"testing"
)

// TestBoundRule: MaxWait zero is DefaultMaxWait and negative no bound;
// MaxRetries zero is DefaultMaxRetries and negative no retry.
func TestBoundRule(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opts        Options
		wait        int64
		retries     int
		description string
	}{
		{Options{}, int64(DefaultMaxWait), DefaultMaxRetries, "zero: defaults"},
		{Options{MaxWait: -1, MaxRetries: -1}, math.MaxInt64, 0, "negative: no bound, no retry"},
		{Options{MaxWait: 5, MaxRetries: 2}, 5, 2, "given"},
	} {
		tt.opts.AppID, tt.opts.Key = "1", key
		a, err := New(tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if int64(a.maxWait) != tt.wait || a.maxRetries != tt.retries {
			t.Errorf("%s: maxWait %d, maxRetries %d; want %d, %d", tt.description, a.maxWait, a.maxRetries, tt.wait, tt.retries)
		}
	}
}

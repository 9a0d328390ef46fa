package longtest

import (
	"fmt"
	"strings"
	"testing"
)

// skipRecorder is a testing.TB whose Skipf records its message instead of
// ending the test.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (s *skipRecorder) Helper() {}

func (s *skipRecorder) Skipf(format string, args ...any) { s.skipped = fmt.Sprintf(format, args...) }

func TestRequire(t *testing.T) {
	tests := []struct {
		value   string
		skipped bool
	}{
		{value: "", skipped: true},
		{value: "0", skipped: true},
		{value: "true", skipped: true},
		{value: "1", skipped: false},
	}
	for _, tt := range tests {
		t.Run("FORGEHOOKS_LONG="+tt.value, func(t *testing.T) {
			t.Setenv(Env, tt.value)
			if got := Enabled(); got != !tt.skipped {
				t.Errorf("Enabled() = %v, want %v", got, !tt.skipped)
			}
			r := &skipRecorder{TB: t}
			Require(r, "a soak of ten minutes")
			if got := r.skipped != ""; got != tt.skipped {
				t.Fatalf("skipped = %v (%q), want %v", got, r.skipped, tt.skipped)
			}
			if tt.skipped && (!strings.Contains(r.skipped, "a soak of ten minutes") || !strings.Contains(r.skipped, "make test-long") || !strings.Contains(r.skipped, "FORGEHOOKS_LONG=1")) {
				t.Errorf("skip message %q lacks the reason, make test-long or FORGEHOOKS_LONG=1", r.skipped)
			}
		})
	}
}

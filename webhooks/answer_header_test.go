package webhooks

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestWriteTextHeader checks the header writeText sets, and that its two
// values, which share one backing array, stay apart when a caller adds to
// either one afterwards.
func TestWriteTextHeader(t *testing.T) {
	tests := []struct {
		name, text string
		add        string // the header a caller adds a value to afterwards
		want       map[string][]string
	}{
		{"plain", "ok\n", "", map[string][]string{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Length": {"3"}}},
		{"add to type", "still processing\n", "Content-Type", map[string][]string{"Content-Type": {"text/plain; charset=utf-8", "x"}, "Content-Length": {"17"}}},
		{"add to length", "", "Content-Length", map[string][]string{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Length": {"0", "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeText(rec, http.StatusAccepted, tt.text)
			if tt.add != "" {
				rec.Header().Add(tt.add, "x")
			}
			for k, want := range tt.want {
				if got := rec.Header()[k]; !slices.Equal(got, want) {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if rec.Code != http.StatusAccepted || rec.Body.String() != tt.text {
				t.Errorf("answered %d %q, want %d %q", rec.Code, rec.Body.String(), http.StatusAccepted, tt.text)
			}
		})
	}
}

package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	long := strings.Repeat("a", Max+1)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "push", "push"},
		{"exactly Max", strings.Repeat("a", Max), strings.Repeat("a", Max)},
		{"one over", long, strings.Repeat("a", Max) + "…[truncated; 257 bytes]"},
		{"rune across the cut", strings.Repeat("a", Max-1) + "é" + "tail", strings.Repeat("a", Max-1) + "…[truncated; 261 bytes]"},
		{"invalid bytes", strings.Repeat("\xff", 1<<20), "\uFFFD…[truncated; 1048576 bytes]"},
		{"short, invalid bytes", "a\xff\xfeb", "a\uFFFDb"},
		{"valid, then invalid", "id-" + strings.Repeat("\xff", 300), "id-\uFFFD…[truncated; 303 bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in)
			if got != tt.want {
				t.Errorf("String(%d bytes) = %q, want %q", len(tt.in), got, tt.want)
			}
			if len(got) > Max+40 {
				t.Errorf("String kept %d bytes", len(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("String cut a rune: %q", got)
			}
		})
	}
}

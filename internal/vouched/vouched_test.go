package vouched

import (
	"context"
	"testing"
)

// TestAction: a context vouches for the very slice it was given, and for
// no other: not a copy, not a part of it, not a longer slice of the same
// array, not an empty one; a context without a word vouches for nothing.
func TestAction(t *testing.T) {
	t.Parallel()
	buf := []byte(`{"action":"opened"}  `)
	data := buf[:19]
	ctx := With(context.Background(), data, "opened")
	tests := []struct {
		name   string
		ctx    context.Context
		data   []byte
		ok     bool
		action string
	}{
		{"the slice", ctx, data, true, "opened"},
		{"under another value", context.WithValue(ctx, struct{ k int }{}, 1), data, true, "opened"},
		{"a copy", ctx, append([]byte(nil), data...), false, ""},
		{"a prefix", ctx, data[:10], false, ""},
		{"a longer slice", ctx, buf, false, ""},
		{"a later start", ctx, data[1:], false, ""},
		{"empty", ctx, nil, false, ""},
		{"no word", context.Background(), data, false, ""},
		{"vouched empty", With(context.Background(), data[:0], "x"), data[:0], false, ""},
		{"no action", With(context.Background(), data, ""), data, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			action, ok := Action(tt.ctx, tt.data)
			if ok != tt.ok || action != tt.action {
				t.Errorf("Action = %q, %v; want %q, %v", action, ok, tt.action, tt.ok)
			}
		})
	}
}

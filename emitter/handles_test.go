package emitter_test

import (
	"context"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
)

func TestHandles(t *testing.T) {
	em := emitter.New(emitter.Options{})
	h := func(context.Context, emitter.Event) error { return nil }
	if em.Handles("issues", "opened") {
		t.Error("no handler, yet handled")
	}
	em.On("issues.opened", h)
	em.On("push", h)
	for _, tc := range []struct {
		event, action string
		want          bool
	}{{"issues", "opened", true}, {"issues", "closed", false}, {"issues", "", false}, {"push", "", true}, {"push", "x", true}} {
		if got := em.Handles(tc.event, tc.action); got != tc.want {
			t.Errorf("%s.%s: %v", tc.event, tc.action, got)
		}
	}
	em.OnAny(h)
	if !em.Handles("anything", "") {
		t.Error("OnAny: not handled")
	}
}

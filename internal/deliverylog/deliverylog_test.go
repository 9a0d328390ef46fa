package deliverylog

import (
	"context"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
)

// TestNote: through an emitter, Note fills the Info of the delivery's context
// with the action, repository and sender, clipped; without an Info it does
// nothing.
func TestNote(t *testing.T) {
	em := emitter.New(emitter.Options{})
	em.OnAny(Note)
	long := strings.Repeat("x", 1000)
	for _, tt := range []struct {
		payload, action, repo, sender string
	}{
		{`{"action":"opened","repository":{"full_name":"octo/site"},"sender":{"login":"mona"}}`, "opened", "octo/site", "mona"},
		{`{"ref":"refs/heads/main"}`, "", "", ""},
		{`{"sender":{"login":"` + long + `"}}`, "", "", long[:256] + "…[truncated; 1000 bytes]"},
	} {
		ctx, info := With(context.Background())
		if err := em.Receive(ctx, emitter.Event{Name: "issues", Payload: []byte(tt.payload)}); err != nil {
			t.Fatal(err)
		}
		if a, r, s := info.Fields(); a != tt.action || r != tt.repo || s != tt.sender {
			t.Errorf("Fields() = %q, %q, %q; want %q, %q, %q", a, r, s, tt.action, tt.repo, tt.sender)
		}
	}
	if err := em.Receive(context.Background(), emitter.Event{Name: "push", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

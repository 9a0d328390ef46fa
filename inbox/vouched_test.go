package inbox

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestStoredActionDispatch: the workers hand a stored delivery to the
// emitter with the action its intake found (no second scan of the body),
// and the handlers of "name.action" run exactly as for the same body
// received directly: in a sealed inbox (embedded, and a cluster with a
// key) and an unsealed one, for actions the stored header keeps as they
// are and for those it cannot (clipped past 256 bytes, blanks at an end,
// a line break), with escapes, without an action; and for a message in
// the form stored before the inbox kept the action in a header (no
// Forgehooks-Action, no Forgehooks-Size), which a user upgrading may have
// waiting.
func TestStoredActionDispatch(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 300)
	bodies := map[string]string{ // id: body
		"plain":    `{"action":"opened","n":1}`,
		"escaped":  `{"action":"op\u0065ned","n":2}`,
		"last":     `{"action":"closed","x":{"action":"nested"},"action":"opened"}`,
		"long":     `{"action":"` + long + `"}`,
		"blanks":   `{"action":" opened "}`,
		"newline":  `{"action":"open\ned"}`,
		"none":     `{"zen":"x"}`,
		"number":   `{"action":5}`,
		"oldform":  `{"action":"opened","n":3}`,
		"oldother": `{"action":"reopened"}`,
		"current":  `{"action":"reopened","n":4}`,
	}
	for _, mode := range []string{"embedded", "cluster", "unsealed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			wh := newWebhooks(t)
			var mu sync.Mutex
			got := map[string][]string{} // id: what ran, the action seen
			record := func(label string) emitter.Handler {
				return func(ctx context.Context, e emitter.Event) error {
					mu.Lock()
					defer mu.Unlock()
					got[e.ID] = append(got[e.ID], label+":"+e.Action())
					return nil
				}
			}
			wh.On("issues.opened", record("opened"))
			wh.On("issues."+long, record("long"))
			wh.On("issues. opened ", record("blanks"))
			wh.On("issues.open\ned", record("newline"))
			wh.On("issues.reopened", record("reopened"))
			wh.On("issues", record("issues"))
			o := Options{Receiver: wh, RetryDelays: []time.Duration{time.Hour}}
			var in *Inbox
			switch mode {
			case "embedded":
				in = openInbox(t, t.TempDir(), o)
			case "cluster":
				o.Key = []byte(strings.Repeat("k", 32))
				in = openClusterInbox(t, singleNode(t), o)
			case "unsealed":
				o.InsecureUnsealed, o.Key = true, []byte{}
				in = openClusterInbox(t, singleNode(t), o)
			}
			ctx := context.Background()
			for id, body := range bodies {
				if strings.HasPrefix(id, "old") || id == "current" {
					continue
				}
				if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: id, Name: "issues", Payload: []byte(body)}); err != nil {
					t.Fatalf("Enqueue %s: %v", id, err)
				}
			}
			for _, id := range []string{"oldform", "oldother", "current"} {
				// As the inbox stored it before it kept the action in
				// a header: sealed, no Forgehooks-Action and -Size; and
				// ("current") as it stored it before the action was
				// marked exact: Action and Size, no Exact-Action.
				m := &nats.Msg{Subject: in.inSubj + stored.StoreToken, Data: []byte(bodies[id]), Header: nats.Header{}}
				m.Header.Set(stored.HeaderVersion, stored.Version)
				m.Header.Set(stored.HeaderEvent, "issues")
				m.Header.Set(stored.HeaderDelivery, id)
				m.Header.Set(stored.HeaderReceivedAt, time.Now().UTC().Format(time.RFC3339Nano))
				if id == "current" {
					// A lie the flag's absence must not let through.
					stored.SetMeta(m.Header.Set, "opened", "o/r", "s", len(bodies[id]))
					m.Header.Del(stored.HeaderExactAction)
				}
				in.seal(m)
				if _, err := in.js.PublishMsg(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			for id := range bodies {
				waitHandled(t, in, id, 30*time.Second)
			}
			want := map[string][]string{
				"plain":    {"issues:opened", "opened:opened"},
				"escaped":  {"issues:opened", "opened:opened"},
				"last":     {"issues:opened", "opened:opened"},
				"long":     {"issues:" + long, "long:" + long},
				"blanks":   {"blanks: opened ", "issues: opened "},
				"newline":  {"issues:open\ned", "newline:open\ned"},
				"none":     {"issues:"},
				"number":   {"issues:"},
				"oldform":  {"issues:opened", "opened:opened"},
				"oldother": {"issues:reopened", "reopened:reopened"},
				"current":  {"issues:reopened", "reopened:reopened"},
			}
			mu.Lock()
			defer mu.Unlock()
			for id, w := range want {
				g := slices.Sorted(slices.Values(got[id]))
				if strings.Join(g, "|") != strings.Join(w, "|") {
					t.Errorf("%s: ran %q, want %q", id, g, w)
				}
			}
			if dead, _ := in.Dead(ctx); len(dead) != 0 {
				t.Errorf("dead letters: %+v", dead)
			}
		})
	}
}

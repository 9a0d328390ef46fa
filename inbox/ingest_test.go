package inbox

import (
	"context"
	"errors"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// separately is what scanBody's one pass must equal: each value found by a
// pass of its own, as the built-in keys and the emitter find them.
func separately(body []byte, key OrderKey) (ingest, error) {
	if _, err := jsonscan.Scan(body); err != nil {
		return ingest{}, err
	}
	var found [2]jsonscan.Result
	_ = jsonscan.Lookup(body, stored.MetaPaths, found[:])
	g := ingest{action: emitter.Event{Payload: body}.Action(), repository: found[0].String(body), sender: found[1].String(body)}
	if key != nil {
		g.key = key(webhooks.Delivery{Name: "e", Payload: body})
	}
	return g, nil
}

var ingestSeeds = []string{
	`{}`,
	`{"action":"opened","repository":{"id":7,"full_name":"o/r"},"sender":{"login":"u"}}`,
	`{"action":1,"repository":{"id":"7"},"installation":{"id":99}}`,
	`{"issue":{"id":5},"pull_request":{"id":6},"repository":{"id":1},"action":"x","action":"y"}`,
	`{"workflow_job":{"id":12},"repository":{"id":1,"id":2},"repository":{"full_name":"\u006f/r"}}`,
	`{"sender":{"login":"a\"b"},"check_suite":{"id":-3}}`,
	`[1]`, `"s"`, `null`, `{"a":`, `{}{}`, "\xef\xbb\xbf{}", ` {"action":"edited"} `,
}

// TestScanBody: one pass finds what the separate passes found, for every
// built-in key and a caller's own, and refuses what they refuse.
func TestScanBody(t *testing.T) {
	own := OrderKey(func(d webhooks.Delivery) string { return "own:" + d.Name })
	for _, body := range ingestSeeds {
		for _, key := range []OrderKey{nil, ByRepository, ByInstallation, BySubject, own} {
			in := &Inbox{opts: Options{OrderBy: key}}
			got, err := in.scanBody(webhooks.Delivery{Name: "e", ID: "d", Payload: []byte(body)})
			want, wantErr := separately([]byte(body), key)
			if (err != nil) != (wantErr != nil) || got != want {
				t.Errorf("%s: scanBody = %+v, %v; separately %+v, %v", body, got, err, want, wantErr)
			}
			if err != nil && !errors.Is(err, webhooks.ErrInvalidPayload) {
				t.Errorf("%s: error %v does not wrap ErrInvalidPayload", body, err)
			}
		}
	}
}

func FuzzScanBody(f *testing.F) {
	for _, s := range ingestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, key := range []OrderKey{nil, ByRepository, ByInstallation, BySubject} {
			in := &Inbox{opts: Options{OrderBy: key}}
			got, err := in.scanBody(webhooks.Delivery{Name: "e", Payload: body})
			want, wantErr := separately(body, key)
			if (err != nil) != (wantErr != nil) || got != want {
				t.Fatalf("%q: scanBody = %+v, %v; separately %+v, %v", body, got, err, want, wantErr)
			}
		}
	})
}

// TestEnqueueRefusesNotAnObject: every caller of Enqueue gets the check;
// nothing is stored for a body that is not one JSON object.
func TestEnqueueRefusesNotAnObject(t *testing.T) {
	in := openInbox(t, t.TempDir(), Options{OrderBy: ByRepository})
	ctx := context.Background()
	for _, body := range []string{`[1]`, `{"a":`, `null`, `{}{}`} {
		_, err := in.Enqueue(ctx, webhooks.Delivery{ID: "bad-" + body, Name: "push", Payload: []byte(body)})
		if !errors.Is(err, webhooks.ErrInvalidPayload) {
			t.Errorf("%s: Enqueue error %v, want ErrInvalidPayload", body, err)
		}
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "good", Name: "push", Payload: []byte(`{"repository":{"id":1}}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Get(ctx, "bad-[1]"); err == nil {
		t.Error("a refused body was stored")
	}
	if _, err := in.Get(ctx, "good"); err != nil {
		t.Errorf("the valid delivery: %v", err)
	}
}

// BenchmarkIngestScan: Enqueue's one pass over a large body against the
// passes it replaced (validation, order key, action, list values).
func BenchmarkIngestScan(b *testing.B) {
	body := []byte(`{"ref":"refs/heads/main","commits":[` + strings.Repeat(`{"id":"0123456789abcdef","message":"a commit message of some length","author":{"name":"n","email":"e@x"}},`, 2000) +
		`{}],"repository":{"id":42,"full_name":"o/r"},"sender":{"login":"u"}}`)
	in := &Inbox{opts: Options{OrderBy: ByRepository}}
	d := webhooks.Delivery{Name: "push", Payload: body}
	b.Run("one-pass", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := in.scanBody(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("separate-passes", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := separately(body, ByRepository); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Package customschema_test receives an event that only a schema of one's own
// has, typed: the schema in schema/, package forgepayloads generated from it
// by forgehooks' public generator (go generate ./forgepayloads), and a test over the
// middleware with webhookstest. It is a module of its own, as a user's would be.
package customschema_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/examples/customschema/forgepayloads"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

const secret = "customschema-example-secret-0123"

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReceiveCustomEvent: a signed "build" delivery with action "finished"
// reaches the typed handler of build.finished, decoded into the generated
// struct, and not the handler of build.started; the generated names package
// is the KnownEvent check, so the custom names register without a warning
// while a misspelt one warns.
func TestReceiveCustomEvent(t *testing.T) {
	var log lockedBuffer
	wh, err := webhooks.New(webhooks.Options{
		Secret:     secret,
		Logger:     slog.New(slog.NewTextHandler(&log, nil)),
		KnownEvent: forgepayloads.IsKnownEventName,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *forgepayloads.BuildFinishedEvent, 1)
	forgepayloads.OnBuildFinishedEvent(wh, func(ctx context.Context, e forgepayloads.Event[*forgepayloads.BuildFinishedEvent]) error {
		got <- e.Payload
		return nil
	})
	started := 0
	forgepayloads.OnBuildEvent(wh, func(ctx context.Context, e forgepayloads.Event[forgepayloads.BuildEvent]) error {
		started++
		return nil
	}, "started")
	if log.String() != "" {
		t.Fatalf("the schema's own names warned: %s", log.String())
	}

	body := []byte(`{"action":"finished","build":{"id":7,"head_sha":"abc123","started_at":"2026-11-26T05:00:00Z",` +
		`"finished_at":"2026-11-26T05:03:00Z","conclusion":"success","runner":"r-1"},"installation":{"id":42},"sender":{"login":"octo","id":1}}`)
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{})
	rec := webhookstest.Deliver(t, mw, webhookstest.NewRequest(t, secret, "build", body))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	p := <-got
	if p.GetBuild().GetHeadSHA() != "abc123" || p.GetInstallation().GetID() != 42 || p.Build.GetConclusion() != forgepayloads.BuildConclusionSuccess ||
		p.GetBuild().GetFinishedAt().Time().Sub(p.Build.StartedAt.Time()).Minutes() != 3 {
		t.Errorf("decoded: %+v", p)
	}
	if m := forgepayloads.UnknownMembers(p.GetBuild()); len(m) != 1 || m[0].Key != "runner" {
		t.Errorf("unknown members of build: %+v", m)
	}
	if started != 0 {
		t.Errorf("the build.started handler ran %d times for build.finished", started)
	}
	if out, err := p.MarshalJSON(); err != nil || !bytes.Equal(out, body) {
		t.Errorf("MarshalJSON = %s, %v; want the body back", out, err)
	}

	wh.On("build.finishd", func(context.Context, emitter.Event) error { return nil })
	if !bytes.Contains([]byte(log.String()), []byte("name=build.finishd")) {
		t.Errorf("a misspelt name did not warn: %q", log.String())
	}
}

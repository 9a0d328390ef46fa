package payloads_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestTypedHandlersOverHTTP sends signed corpus deliveries to the middleware on
// 127.0.0.1 and checks that typed handlers registered on a *webhooks.Webhooks get
// them decoded, and that a payload that does not decode fails the delivery.
func TestTypedHandlersOverHTTP(t *testing.T) {
	wh, err := webhooks.New(webhooks.Options{Secret: "test secret"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	payloads.OnPushEvent(wh, func(ctx context.Context, e payloads.Event[*payloads.PushEvent]) error {
		mu.Lock()
		defer mu.Unlock()
		got["push "+e.Payload.Ref]++
		return nil
	})
	payloads.OnPullRequestEvent(wh, func(ctx context.Context, e payloads.Event[payloads.PullRequestEvent]) error {
		mu.Lock()
		defer mu.Unlock()
		got[payloads.PayloadName(e.Payload)]++
		return nil
	})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// ExposeHandlerErrors, so that the answer names the decode error checked
	// below (by default it is a generic message).
	srv := httptest.NewUnstartedServer(webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{ExposeHandlerErrors: true}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	defer srv.Close()

	post := func(event string, body []byte) (int, string) {
		t.Helper()
		sig, err := wh.Sign(body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/forge/webhooks", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forge-Event", event)
		req.Header.Set("X-Forge-Delivery", "d-http")
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	want := map[string]int{}
	for _, ex := range corpus.Public() {
		if ex.Event != "push" && ex.Event != "pull_request" {
			continue
		}
		if code, body := post(ex.Event, ex.Body); code != http.StatusOK {
			t.Fatalf("%s: %d %s", ex.Path, code, body)
		}
		if ex.Event == "pull_request" {
			want[ex.Name()]++
		}
	}
	mu.Lock()
	pushes := 0
	for k, n := range got {
		if strings.HasPrefix(k, "push ") {
			pushes += n
			continue
		}
		if want[k] != n {
			t.Errorf("%s: %d typed deliveries, want %d", k, n, want[k])
		}
	}
	mu.Unlock()
	if pushes == 0 || len(want) == 0 {
		t.Fatalf("no typed delivery seen: %v", got)
	}

	code, body := post("push", []byte(`{"ref":1}`))
	if code != http.StatusInternalServerError || !strings.Contains(body, "want string, got number") {
		t.Errorf("undecodable push: %d %s, want 500 naming the decode error", code, body)
	}
}

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/signing"
)

// TestSendGeneratedSamples: names with no public example (those the second
// source and the overlay brought) are served from the samples generated from the
// schema, byte for byte, signed.
func TestSendGeneratedSamples(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	bodies := map[string][]byte{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if ok, _ := signing.Verify(vectorSecret, body, r.Header.Get("X-Hub-Signature-256")); !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		bodies[r.Header.Get("X-Forge-Event")] = body
		mu.Unlock()
	}))
	defer ts.Close()
	if !payloads.IsKnownEventName("pull_request.stacked") {
		t.Skip("the schema is not imported with @octokit/openapi (make spec-versions)")
	}
	for _, tc := range []struct{ name, event, path string }{
		{"pull_request.stacked", "pull_request", "generated/pull_request/stacked-0.json"},
		{"dismissal_request_dependabot.created", "dismissal_request_dependabot", "generated/dismissal_request_dependabot/created-0.json"},
		{"issue_relates_to.relates_to_added", "issue_relates_to", "generated/issue_relates_to/relates_to_added-0.json"},
	} {
		code, out, errOut := runCmd(t, "", nil, "send", "--url", ts.URL, "--secret", vectorSecret, "--event", tc.name)
		if code != exitOK || out != "200 OK\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.name, code, out, errOut)
			continue
		}
		mu.Lock()
		got := bodies[tc.event]
		mu.Unlock()
		// send follows the sample with whitespace of its own (see its help).
		if want := corpus.Body(tc.path); want == nil || !bytes.Equal(bytes.TrimRight(got, " \t\r\n"), want) {
			t.Errorf("%s: sent %.80s, want the generated sample %s", tc.name, got, tc.path)
		}
	}
}

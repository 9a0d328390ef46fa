package app_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestRefusalsThatNoRetryCures: the forge's 403 "Resource not accessible by
// integration" and a 404 for an installation's token are *RefusedErrors,
// final to webhooks.IsPermanent through the client's error; any other
// refusal is not, and another 403 reaches the caller as the answer it is,
// its body whole.
func TestRefusalsThatNoRetryCures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		installation int64
		fault        *forgetest.Fault
		wantStatus   int    // the answer the client returns; 0: an error
		wantFinal    bool   // the error is a final *RefusedError
		wantErr      string // in the error's message
	}{
		{
			name: "not accessible by integration", installation: testInstallation,
			fault:     &forgetest.Fault{Method: "POST", Suffix: "/comments", Status: 403, Body: `{"message":"Resource not accessible by integration","documentation_url":"https://docs.example/rest"}`},
			wantFinal: true, wantErr: "app: installation 42: POST /repos/octo/site/issues/1/comments: 403 Forbidden: Resource not accessible by integration (the app lacks the permission",
		},
		{
			name: "no such installation", installation: 43,
			wantFinal: true, wantErr: "app: installation 43: POST /app/installations/43/access_tokens: 404 Not Found",
		},
		{
			name: "another 403", installation: testInstallation,
			fault:      &forgetest.Fault{Method: "POST", Suffix: "/comments", Status: 403, Body: `{"message":"Must have admin rights to Repository."}`},
			wantStatus: 403,
		},
		{
			name: "a server error", installation: testInstallation,
			fault:      &forgetest.Fault{Method: "POST", Suffix: "/comments", Status: 502, Body: `{"message":"Bad gateway"}`},
			wantStatus: 502,
		},
		{
			name: "the app's JWT refused", installation: testInstallation,
			fault:   &forgetest.Fault{Method: "POST", Suffix: "/access_tokens", Status: 401, Body: `{"message":"A JSON web token could not be decoded"}`},
			wantErr: "401 Unauthorized",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, false, forgetest.Options{SecondaryLimit: -1})
			if tt.fault != nil {
				e.forge.Fail(*tt.fault)
			}
			c := e.app(nil).InstallationClient(tt.installation)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.forge.URL+"/repos/octo/site/issues/1/comments", strings.NewReader(`{"body":"hi"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := c.Do(req)
			if tt.wantStatus != 0 {
				if err != nil {
					t.Fatalf("error %v, want the answer %d", err, tt.wantStatus)
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				if res.StatusCode != tt.wantStatus || !strings.Contains(string(b), "message") || !strings.HasSuffix(strings.TrimSpace(string(b)), "}") {
					t.Errorf("answer %d %q, want %d with the forge's body whole", res.StatusCode, b, tt.wantStatus)
				}
				return
			}
			if err == nil {
				res.Body.Close()
				t.Fatalf("answer %d, want an error", res.StatusCode)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.wantErr)
			}
			var ref *app.RefusedError
			if got := errors.As(err, &ref); got != tt.wantFinal {
				t.Errorf("errors.As(*app.RefusedError) = %v, want %v (%v)", got, tt.wantFinal, err)
			}
			if got := webhooks.IsPermanent(err); got != tt.wantFinal {
				t.Errorf("webhooks.IsPermanent = %v, want %v (%v)", got, tt.wantFinal, err)
			}
			if ref != nil && ref.Installation != tt.installation {
				t.Errorf("RefusedError.Installation = %d, want %d", ref.Installation, tt.installation)
			}
		})
	}
}

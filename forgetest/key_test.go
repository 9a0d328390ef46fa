package forgetest_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/forgetest"
)

// With no Options but a base path, an app client given the built-in key and
// the fake's URL gets tokens and comments under that path, as a self-hosted
// forge serves them; a request outside the base path is a 404 and a
// violation.
func TestBuiltinKeyAndBasePath(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forgetest.Options{BasePath: "api/v3/", AllowViolations: true})
	if !strings.HasSuffix(f.URL, "/api/v3") || f.AppID() != forgetest.DefaultAppID {
		t.Fatalf("URL %q, app id %q", f.URL, f.AppID())
	}
	f.AddInstallation(3)
	a, err := app.New(app.Options{AppID: f.AppID(), PrivateKey: forgetest.PrivateKeyPEM(), APIURL: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := a.InstallationClient(3)
	res, err := c.Post(f.URL+"/repos/o/r/issues/2/comments", "application/json", strings.NewReader(`{"body":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || len(f.Comments()) != 1 || f.Comments()[0].Installation != 3 {
		t.Fatalf("%d, comments %+v", res.StatusCode, f.Comments())
	}
	outside := strings.TrimSuffix(f.URL, "/api/v3") + "/repos/o/r/issues/2/comments"
	res, err = c.Post(outside, "application/json", strings.NewReader(`{"body":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || len(f.Violations()) != 1 || !strings.Contains(f.Violations()[0], "base path /api/v3") {
		t.Fatalf("outside the base path: %d, violations %q", res.StatusCode, f.Violations())
	}
}

// TestDependencies: a bot's tests import forgetest; it uses the standard
// library and signing only.
func TestDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "forgehooks.dev/forgehooks/forgetest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		switch p {
		case "forgehooks.dev/forgehooks/forgetest", "forgehooks.dev/forgehooks/signing":
		default:
			t.Errorf("forgetest imports %s", p)
		}
	}
}

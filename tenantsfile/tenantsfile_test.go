package tenantsfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/tenantsfile"
	"forgehooks.dev/forgehooks/webhooks"
)

const sample = `tenants:
  acme:
    secrets: ["acme-current-secret-01", "acme-previous-secret-1"]
    hooks: [12345]
    installation: 4242
  beta:
    secrets: ["env:BETA_SECRET", {env: BETA_OLD}]
    token: {file: beta.token}
    api_url: https://forge.beta.example/api/v3/
  gamma:
    secrets: [file:gamma.secret, {file: gamma.secret}]
    token: env:GAMMA_TOKEN
# comments after the marker are fine
end: true

`

// write puts name's contents in dir.
func write(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(k string) string {
	return map[string]string{"BETA_SECRET": "beta-secret-from-env", "BETA_OLD": "beta-old-secret", "GAMMA_TOKEN": "gamma-token-value"}[k]
}

// TestLoad: every field and every form of reference.
func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "beta.token", "beta-token-from-file\n")
	write(t, dir, "gamma.secret", "gamma-secret-from-file\r\n")
	path := write(t, dir, "tenants.yaml", sample)
	got, err := tenantsfile.Loader{Getenv: env}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := webhooks.StaticTenants{
		"acme":  {Secrets: []string{"acme-current-secret-01", "acme-previous-secret-1"}, Hooks: []string{"12345"}, Installation: 4242},
		"beta":  {Secrets: []string{"beta-secret-from-env", "beta-old-secret"}, Token: "beta-token-from-file", APIURL: "https://forge.beta.example/api/v3"},
		"gamma": {Secrets: []string{"gamma-secret-from-file", "gamma-secret-from-file"}, Token: "gamma-token-value"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d tenants, want %d: %+v", len(got), len(want), got)
	}
	for name, w := range want {
		g := got[name]
		if strings.Join(g.Secrets, ",") != strings.Join(w.Secrets, ",") || strings.Join(g.Hooks, ",") != strings.Join(w.Hooks, ",") ||
			g.Installation != w.Installation || g.Token != w.Token || g.APIURL != w.APIURL {
			t.Errorf("%s: %+v, want %+v", name, g, w)
		}
	}
}

// TestParseRefuses: what the format refuses, and that the error says so
// with its line, never quoting a secret or a token.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "empty", "")
	const secret = "Zq9Xv7Kw3Jp5Qy"
	for _, tc := range []struct{ name, yaml, want string }{
		{"empty", "", "empty"},
		{"no marker", "tenants:\n  a:\n    secrets: [x]\n", "end: true"},
		{"half written", sample[:len(sample)/2], "end: true"},
		{"marker cut", strings.TrimSuffix(strings.TrimRight(sample, "\n"), "e"), "end: true"},
		{"marker not last", "end: true\ntenants:\n  a:\n    secrets: [x]\n# end: true\nend: true\n", "given twice"},
		{"marker false", "tenants:\n  a:\n    secrets: [x]\nend: false\nend: true\n", "given twice"},
		{"no tenants", "tenants: {}\nend: true\n", "no tenants"},
		{"tenants missing", "end: true\n", "no tenants"},
		{"unknown top key", "tenant:\n  a:\n    secrets: [x]\nend: true\n", "line 1: unknown key"},
		{"unknown field", "tenants:\n  a:\n    secret: [" + secret + "]\nend: true\n", "line 3: tenant a: unknown key"},
		{"no secret", "tenants:\n  a:\n    secrets: []\nend: true\n", "tenant a: 0 secrets"},
		{"secrets missing", "tenants:\n  a:\n    hooks: [1]\nend: true\n", "tenant a: 0 secrets"},
		{"empty secret", "tenants:\n  a:\n    secrets: [\"\"]\nend: true\n", "secret 1: empty"},
		{"null secret", "tenants:\n  a:\n    secrets: [~]\nend: true\n", "secret 1: empty"},
		{"unset env", "tenants:\n  a:\n    secrets: [env:NOPE]\nend: true\n", "NOPE is unset"},
		{"unset env map", "tenants:\n  a:\n    secrets: [{env: NOPE}]\nend: true\n", "NOPE is unset"},
		{"bad ref", "tenants:\n  a:\n    secrets: [{vault: " + secret + "}]\nend: true\n", "{env: NAME} or {file: PATH}"},
		{"missing file", "tenants:\n  a:\n    secrets: [file:nope]\nend: true\n", "no such file"},
		{"empty file", "tenants:\n  a:\n    secrets: [file:empty]\nend: true\n", "is empty"},
		{"bad name", "tenants:\n  a/b:\n    secrets: [x]\nend: true\n", "line 2: a tenant's name is"},
		{"secret as name", "tenants:\n  " + secret + " x:\n    secrets: [x]\nend: true\n", "line 2: a tenant's name is"},
		{"duplicate tenant", "tenants:\n  a:\n    secrets: [x]\n  a:\n    secrets: [y]\nend: true\n", "line 4: tenants: a key given twice (first on line 2)"},
		{"duplicate field", "tenants:\n  a:\n    secrets: [x]\n    secrets: [y]\nend: true\n", "given twice"},
		{"bad hook", "tenants:\n  a:\n    secrets: [x]\n    hooks: [0]\nend: true\n", "positive"},
		{"hook as string", "tenants:\n  a:\n    secrets: [x]\n    hooks: [" + secret + "]\nend: true\n", "positive"},
		{"hook twice", "tenants:\n  a:\n    secrets: [x]\n    hooks: [1]\n  b:\n    secrets: [y]\n    hooks: [1]\nend: true\n", "two tenants"},
		{"installation text", "tenants:\n  a:\n    secrets: [x]\n    installation: " + secret + "\nend: true\n", "installation: want"},
		{"installation zero", "tenants:\n  a:\n    secrets: [x]\n    installation: 0\nend: true\n", "installation: want"},
		{"secret a list", "tenants:\n  a:\n    secrets: " + secret + "\nend: true\n", "secrets: want a list, not a scalar"},
		{"token a list", "tenants:\n  a:\n    secrets: [x]\n    token: [" + secret + "]\nend: true\n", "token: want a string"},
		{"token newline", "tenants:\n  a:\n    secrets: [x]\n    token: \"" + secret + "\\n\"\nend: true\n", "line break"},
		{"api url", "tenants:\n  a:\n    secrets: [x]\n    api_url: ftp://" + secret + "\nend: true\n", "api_url: want http(s)"},
		{"api url userinfo", "tenants:\n  a:\n    secrets: [x]\n    api_url: https://u:" + secret + "@h\nend: true\n", "user information"},
		{"alias", "tenants:\n  a: &x\n    secrets: [x]\n  b: *x\nend: true\n", "aliases"},
		{"not yaml", "tenants: [\nend: true\n", "yaml"},
		{"a secret taken for an alias", "tenants:\n  a:\n    secrets: [*" + secret + "]\nend: true\n", "unknown anchor"},
		{"a bad escape", "tenants:\n  a:\n    secrets: [\"" + secret + "\\q\"]\nend: true\n", "escape"},
		{"two documents", "tenants:\n  a:\n    secrets: [x]\n---\nend: true\n", "one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tenantsfile.Loader{Getenv: env}.Parse([]byte(tc.yaml), dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one with %q", err, tc.want)
			}
			// Not one run of 4 characters of the secret.
			for i := 0; i+4 <= len(secret); i++ {
				if strings.Contains(err.Error(), secret[i:i+4]) {
					t.Fatalf("the error quotes the secret: %v", err)
				}
			}
		})
	}
	if _, err := (tenantsfile.Loader{}).Parse([]byte("tenants:\n  a:\n    secrets: [x]\nend: true\n"), dir); err != nil {
		t.Errorf("the smallest file: %v", err)
	}
}

// TestMaxTenants: MaxTenants tenants load, each whole; one more is refused;
// a duplicate among them is found with its line.
func TestMaxTenants(t *testing.T) {
	if raceEnabled {
		t.Skip("100,000 tenants take a minute under the race detector; the test runs without it")
	}
	t.Parallel()
	data := manyTenants(tenantsfile.MaxTenants)
	ts, err := tenantsfile.Loader{}.Parse(data, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != tenantsfile.MaxTenants || ts["t099999"].Installation != 1000+99999 || ts["t000000"].Hooks[0] != "1" {
		t.Fatalf("%d tenants; t099999 %+v", len(ts), ts["t099999"])
	}
	more := strings.Replace(string(data), "end: true\n", "  extra:\n    secrets: [x]\nend: true\n", 1)
	if _, err := (tenantsfile.Loader{}).Parse([]byte(more), t.TempDir()); err == nil || !strings.Contains(err.Error(), "at most 100000") {
		t.Errorf("one tenant too many: %v", err)
	}
	// A duplicate among many (the map's path, not the small mappings').
	dup := strings.Replace(string(manyTenants(100)), "end: true\n", "  t000007:\n    secrets: [x]\nend: true\n", 1)
	if _, err := (tenantsfile.Loader{}).Parse([]byte(dup), t.TempDir()); err == nil || !strings.Contains(err.Error(), "line 402: tenants: a key given twice (first on line 30)") {
		t.Errorf("a duplicate: %v", err)
	}
}

// FuzzParse: whatever the file, Parse returns tenants whose every one has a
// valid name, one secret at least and none empty, no negative installation,
// and hooks listed once; or an error.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("tenants:\n  a:\n    secrets: [x]\n    hooks: [1, 2]\nend: true\n"))
	f.Add([]byte("tenants:\n  a: {secrets: [env:X, {file: y}], installation: 3, token: t}\nend: true\n"))
	f.Add([]byte("tenants: &a [*a]\nend: true\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := tenantsfile.Loader{Getenv: func(k string) string { return "v-" + k }}.Parse(data, dir)
		if err != nil {
			return
		}
		hooks := map[string]bool{}
		for name, tn := range set {
			if name == "" || !webhooks.ValidTenantName(name) || len(tn.Secrets) == 0 || tn.Installation < 0 {
				t.Fatalf("tenant %q: %+v", name, tn)
			}
			for _, s := range tn.Secrets {
				if s == "" {
					t.Fatalf("tenant %q has an empty secret", name)
				}
			}
			for _, h := range tn.Hooks {
				if hooks[h] {
					t.Fatalf("hook %s twice", h)
				}
				hooks[h] = true
			}
		}
	})
}

// manyTenants is a tenants file of n tenants, each with a 32-byte secret,
// a hook id and an installation.
func manyTenants(n int) []byte {
	var b strings.Builder
	b.WriteString("tenants:\n")
	for i := range n {
		fmt.Fprintf(&b, "  t%06d:\n    secrets: [\"secret-%06d-0123456789abcdefghij\"]\n    hooks: [%d]\n    installation: %d\n", i, i, i+1, 1000+i)
	}
	b.WriteString("end: true\n")
	return []byte(b.String())
}

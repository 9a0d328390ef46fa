package importschema

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeNPM puts an npm on PATH that "downloads" the tarball $FAKE_NPM_TGZ, or fails
// as npm does for a missing version when $FAKE_NPM_FAIL is set: the command runs
// npm for real, with its output and exit status, without the network.
func fakeNPM(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	script := `#!/bin/sh
if [ -n "$FAKE_NPM_FAIL" ]; then
  echo "npm error code ETARGET" >&2
  echo "npm error notarget $FAKE_NPM_FAIL" >&2
  echo "npm error A complete log of this run can be found in: /tmp/npm-debug.log" >&2
  exit 1
fi
cp "$FAKE_NPM_TGZ" ./octokit-openapi-webhooks-fake.tgz
echo octokit-openapi-webhooks-fake.tgz
`
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_NPM_FAIL", "")
}

// snapshot reads every file under dir.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s: %s was removed", what, p)
		} else if a != b {
			t.Errorf("%s: %s changed", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared", what, p)
		}
	}
}

// TestFetchFlow is make schema VERSION=x with npm on PATH: a tag is recorded as
// the version the package says it is, the variants' files are kept and compared,
// npm's own error is shown, and a failed fetch or import leaves every file as it
// was.
func TestFetchFlow(t *testing.T) {
	fakeNPM(t)
	thing := func(extra string) string {
		return `{"type":"object","required":["action"],"properties":{"action":{"type":"string","enum":["made"]},` +
			`"thing":{"type":"object","properties":{"id":{"type":"integer"}` + extra + `}}}}`
	}
	full := string(testSpec([]hookSpec{
		{"thing-made", "thing", "thing/made", thing(`,"colour":{"type":"string"}`)},
		{"other", "other", "other", `{"type":"object","properties":{"x":{"type":"string"}}}`},
	}, nil))
	older := string(testSpec([]hookSpec{{"thing-made", "thing", "thing/made", thing("")}}, nil))
	pkg := func(version string, files map[string]string) string {
		files["package/package.json"] = `{"name":"@octokit/openapi-webhooks","version":"` + version + `"}`
		p := filepath.Join(t.TempDir(), "pkg.tgz")
		if err := os.WriteFile(p, writeTgz(t, files), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "schema")
	spec := filepath.Join(out, "source", mainVariant+".json.gz")
	run := func(args ...string) (int, string) {
		var stderr bytes.Buffer
		code := Run(append([]string{"-spec", spec, "-overrides", "", "-out", out}, args...), &stderr)
		return code, stderr.String()
	}

	t.Setenv("FAKE_NPM_TGZ", pkg("2.3.4", map[string]string{specFile: full, specDir + "ghes-3.14.json": older}))
	if code, msg := run("-fetch", "latest"); code != 0 {
		t.Fatalf("fetch latest: exit %d\n%s", code, msg)
	}
	rec, err := readRecord(filepath.Join(out, "source", recordName))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != "2.3.4" || len(rec.Variants) != 1 || rec.Variants[0].Name != "ghes-3.14" {
		t.Errorf("record %+v: want version 2.3.4 (latest resolved) and variant ghes-3.14", rec)
	}
	s, err := readSchema(out)
	if err != nil || s == nil {
		t.Fatalf("schema: %v", err)
	}
	if s.Source.Version != "2.3.4" || len(s.Source.Variants) != 1 {
		t.Errorf("events.yaml source %+v", s.Source)
	}
	for _, e := range s.Events {
		if want := e.Name == "other"; (len(e.NotSentBy) == 1) != want {
			t.Errorf("event %s not_sent_by %v", e.Name, e.NotSentBy)
		}
	}
	if f := fieldOf(typeOf(s, "Thing"), "colour"); f == nil || len(f.NotSentBy) != 1 || f.NotSentBy[0] != "ghes-3.14" {
		t.Errorf("Thing.colour: %+v, want not_sent_by [ghes-3.14]", f)
	}
	if f := fieldOf(typeOf(s, "Thing"), "id"); f == nil || len(f.NotSentBy) != 0 {
		t.Errorf("Thing.id: %+v, want sent by every variant", f)
	}
	before := snapshot(t, dir)

	// npm's own message, without its log line.
	t.Setenv("FAKE_NPM_FAIL", "No matching version found for @octokit/openapi-webhooks@99.0.0.")
	code, msg := run("-fetch", "99.0.0")
	if code != 1 || !strings.Contains(msg, "No matching version found for @octokit/openapi-webhooks@99.0.0") || strings.Contains(msg, "complete log") {
		t.Errorf("exit %d, stderr:\n%s\nwant npm's message", code, msg)
	}
	sameFiles(t, "npm failed", before, snapshot(t, dir))
	t.Setenv("FAKE_NPM_FAIL", "")

	// A version whose spec does not import: nothing moves.
	t.Setenv("FAKE_NPM_TGZ", pkg("3.0.0", map[string]string{specFile: `{"openapi":"3.1.0","webhooks":{}}`}))
	if code, msg := run("-fetch", "3.0.0"); code != 1 || !strings.Contains(msg, "unexpected spec") {
		t.Errorf("bad spec: exit %d\n%s", code, msg)
	}
	sameFiles(t, "import failed", before, snapshot(t, dir))

	// A version that imports but breaks compiled code: written, reported, exit 3
	// with -fail-on-breaking; the variant the new version lacks goes.
	t.Setenv("FAKE_NPM_TGZ", pkg("4.0.0", map[string]string{specFile: older}))
	code, msg = run("-fetch", "4.0.0", "-fail-on-breaking", "-changelog", filepath.Join(dir, "CHANGELOG.md"))
	if code != 3 || !strings.Contains(msg, "major") {
		t.Errorf("breaking update: exit %d, want 3\n%s", code, msg)
	}
	if _, err := os.Stat(filepath.Join(out, "source", "ghes-3.14.json.gz")); !os.IsNotExist(err) {
		t.Errorf("the copy of a variant the new version lacks is still there: %v", err)
	}
	cl, _ := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	for _, want := range []string{"2.3.4 → 4.0.0", "**major**", "event removed `other`", "member removed `Thing.colour`"} {
		if !strings.Contains(string(cl), want) {
			t.Errorf("CHANGELOG.md lacks %q:\n%s", want, cl)
		}
	}
}

// TestOverridesYAMLErrors: a syntax error is reported at the file and line where
// the text goes wrong, not where yaml.v3 noticed (the start of the block).
func TestOverridesYAMLErrors(t *testing.T) {
	tests := []struct {
		name, text string
		line       string
	}{
		{"indentation", "renames:\n  - from: A\n    to: B\n    reason: r\n  - from: C\n   to: D\n    reason: r\n", ":6:"},
		{"tab", "renames:\n  - from: A\n\tto: B\n", ":3:"},
		{"unclosed quote", "optional:\n  - in: X\n    json: [a]\n    reason: \"open\n", ":4:"},
		{"unknown key", "renames:\n  - from: A\n    to: B\n    colour: red\n    reason: r\n", ":4:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "overrides.yaml")
			if err := os.WriteFile(p, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := readOverrides(p)
			if err == nil || !strings.Contains(err.Error(), p+tc.line) {
				t.Errorf("got %v, want %s%s", err, p, tc.line)
			}
		})
	}
}

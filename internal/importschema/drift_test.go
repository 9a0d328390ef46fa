package importschema

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// The types of @octokit/openapi-webhooks-types 12.2.0, compressed.
var typesFixture = filepath.Join("testdata", "drift", "types-12.2.0.d.ts.gz")

// pinnedSources skips a test of the committed schema against the fixture unless
// schema/ is imported from the sources the fixture was checked with (make
// spec-versions imports others).
func pinnedSources(t *testing.T) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "schema", "source", "source.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "version: 12.1.0\n") || !strings.Contains(string(src), "package: '@octokit/openapi'\n  version: 23.0.2") {
		t.Skip("schema/ is not imported from @octokit/openapi-webhooks 12.1.0 and @octokit/openapi 23.0.2")
	}
}

func TestParseTypes(t *testing.T) {
	ps, _, err := readTypes(typesFixture)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 274 {
		t.Errorf("%d webhooks, want 274", len(ps))
	}
	byKey := map[string]tsPayload{}
	for _, p := range ps {
		byKey[p.key] = p
	}
	for _, tc := range []struct {
		key, event string
		actions    []string
		member     string
	}{
		{"issues-opened", "issues", []string{"opened"}, "issue"},
		{"issue-relates-to-added", "issue_relates_to", []string{"relates_to_added"}, "related_issue_id"},
		{"label-archived", "label", []string{"archived"}, "label"},
		{"push", "push", nil, "commits"},
		{"projects-v2-item-archived", "projects_v2_item", []string{"archived"}, "projects_v2_item"},
		// A whole-body OneOf: the members of its variants.
		{"pull-request-review-request-removed", "pull_request", []string{"review_request_removed"}, "requested_team"},
	} {
		p, ok := byKey[tc.key]
		if !ok {
			t.Errorf("no webhook %s", tc.key)
			continue
		}
		if p.event != tc.event || !reflect.DeepEqual(p.actions, tc.actions) {
			t.Errorf("%s: event %q actions %q, want %q %q", tc.key, p.event, p.actions, tc.event, tc.actions)
		}
		if indexOf(p.members, tc.member) < 0 {
			t.Errorf("%s: members %v lack %s", tc.key, p.members, tc.member)
		}
	}
	if _, err := parseTypes(strings.NewReader("export interface components {\n}\n")); err == nil {
		t.Error("types without webhooks: no error")
	}
}

// TestDrift: the committed schema knows everything the types know (make
// schema-drift prints nothing); without one name, or one member, it says which.
func TestDrift(t *testing.T) {
	pinnedSources(t)
	dir := filepath.Join("..", "..", "schema")
	var out bytes.Buffer
	if code := runDrift(typesFixture, dir, &out, &out); code != 0 {
		t.Fatalf("exit %d against the committed schema:\n%s", code, out.String())
	}
	s, err := genmodel.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ps, _, err := readTypes(typesFixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(s *genmodel.Schema)
		want []string
	}{
		{"action", func(s *genmodel.Schema) {
			e := findEvent(s, "pull_request")
			for i, a := range e.Actions {
				if a.Name == "stacked" {
					e.Actions = append(e.Actions[:i], e.Actions[i+1:]...)
					break
				}
			}
		}, []string{"name pull_request.stacked (webhook pull-request-stacked)"}},
		{"event", func(s *genmodel.Schema) {
			for i, e := range s.Events {
				if e.Name == "issue_relates_to" {
					s.Events = append(s.Events[:i], s.Events[i+1:]...)
					break
				}
			}
		}, []string{"name issue_relates_to (webhook issue-relates-to-added)", "name issue_relates_to (webhook issue-relates-to-removed)"}},
		{"member", func(s *genmodel.Schema) {
			for i := range s.Types {
				if s.Types[i].Name == "PullRequestMilestonedEvent" {
					f := s.Types[i].Fields
					for j := range f {
						if f[j].JSON == "installation" {
							s.Types[i].Fields = append(f[:j:j], f[j+1:]...)
							break
						}
					}
				}
			}
		}, []string{"member pull_request.milestoned.installation (webhook pull-request-milestoned)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s2, err := genmodel.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(s2)
			if got := drift(s2, ps); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := drift(s, ps); len(got) != 0 {
		t.Errorf("unedited: %q", got)
	}
}

// TestDriftCommand runs the command on a copy of the schema without one action:
// it names the action and exits 1.
func TestDriftCommand(t *testing.T) {
	pinnedSources(t)
	src := filepath.Join("..", "..", "schema")
	dir := t.TempDir()
	for _, f := range []string{genmodel.EventsFile, genmodel.TypesFile} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == genmodel.EventsFile {
			const entry = "      - name: stacked\n"
			i := bytes.Index(data, []byte(entry))
			if i < 0 {
				t.Fatal("no pull_request.stacked in events.yaml")
			}
			// The entry runs to the next action.
			j := bytes.Index(data[i+len(entry):], []byte("      - name: ")) + i + len(entry)
			data = append(data[:i:i], data[j:]...)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	code := RunWith([]string{"-drift", typesFixture, "-out", dir}, &out, Options{})
	if code != 1 || !strings.Contains(out.String(), "name pull_request.stacked (webhook pull-request-stacked)") {
		t.Errorf("exit %d:\n%s", code, out.String())
	}
}

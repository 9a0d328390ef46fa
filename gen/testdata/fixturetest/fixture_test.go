// Tests of the code generated from the fixture schema (gen/testdata/fixture). The
// gen package's TestFixturePackage runs them in a scratch module that holds the
// generated files beside package payloads' hand-written ones.
package payloads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/payloads/names"
)

// TestSentBy: the fixture records that ghes-3.14 sends neither ping nor
// issues.closed, and ghes-3.15 no ping.
func TestSentBy(t *testing.T) {
	for _, tc := range []struct {
		name, variant string
		want          bool
	}{
		{"issues", "ghes-3.14", true},
		{"issues.opened", "ghes-3.14", true},
		{"issues.closed", "ghes-3.14", false},
		{"issues.closed", "ghes-3.15", true},
		{"ping", "ghes-3.15", false},
		{"ping", "", true},
		{"no_such_event", "ghes-3.14", true},
	} {
		if got := payloads.SentBy(tc.name, tc.variant); got != tc.want {
			t.Errorf("SentBy(%q, %q) = %v, want %v", tc.name, tc.variant, got, tc.want)
		}
	}
	if got := names.Variants(); !cmp.Equal(got, []string{"ghes-3.14", "ghes-3.15"}) {
		t.Errorf("Variants() = %q", got)
	}
}

// TestVariantWarning: an emitter serving ghes-3.14 warns, once per name, for
// handlers of names that variant never sends, and for a misspelt name (the
// default check, against names.IsKnown); the handlers are registered all the
// same.
func TestVariantWarning(t *testing.T) {
	var log bytes.Buffer
	em := emitter.New(emitter.Options{Variant: "ghes-3.14", Logger: slog.New(slog.NewTextHandler(&log, nil))})
	h := func(context.Context, emitter.Event) error { return nil }
	em.On("issues.opened", h)
	em.On("push", h)
	if log.Len() != 0 {
		t.Fatalf("names the variant sends logged: %s", &log)
	}
	em.On("issues.closed", h)
	em.On("ping", h)
	em.On("isues", h)
	out := log.String()
	if strings.Count(out, "never sends") != 2 || !strings.Contains(out, "name=issues.closed") || !strings.Contains(out, "name=ping") ||
		strings.Count(out, "unknown event name") != 1 || !strings.Contains(out, "name=isues") {
		t.Errorf("log: %s", out)
	}
}

const issueOpened = `{"action":"opened","issue":{"id":9223372036854775807,"number":1,"html_url":"https://forge.example/o/r/issues/1",` +
	`"title":"Bug","state":"triaged","priority":2,"labels":[{"id":5,"name":"bug","default":false,"color":"f00"},"plain"],` +
	`"assignee":null,"closed_at":null,"body":null,"score":0.1,"reactions":{"total_count":3,"+1":2,"-1":1}},` +
	`"repository":{"id":1,"node_id":"R_1","full_name":"o/r","owner":{"login":"o","id":2,"type":"Organization"},` +
	`"description":null,"created_at":1557933565,"topics":[],"custom_properties":{"team":{"a":[1,2]},"tier":null}},` +
	`"sender":{"login":"octocat","id":3,"type":"User","site_admin":false,"new_member":"kept"},"installation":{"id":7},"later":true}`

func TestFixtureRoundTrip(t *testing.T) {
	p, err := payloads.Parse("issues", []byte(issueOpened))
	if err != nil {
		t.Fatal(err)
	}
	e, ok := p.(*payloads.IssuesOpenedEvent)
	if !ok {
		t.Fatalf("Parse gave %T", p)
	}
	if e.Issue.ID != 9223372036854775807 || e.Issue.State != "triaged" || e.Issue.State.IsKnown() ||
		*e.Issue.Priority != payloads.IssuePriorityHigh || *e.Issue.Score != 0.1 || e.Issue.Reactions.PlusOne != 2 {
		t.Errorf("decoded issue: %+v", e.Issue)
	}
	if l := e.Issue.Labels; len(l) != 2 || l[0].Label == nil || l[0].Label.Name != "bug" || l[1].Name == nil || *l[1].Name != "plain" {
		t.Errorf("labels (a union): %+v", l)
	}
	if !e.Repository.CreatedAt.Time().Equal(time.Unix(1557933565, 0)) || e.Repository.Topics == nil || len(e.Repository.Topics) != 0 {
		t.Errorf("repository: %+v", e.Repository)
	}
	if m := payloads.UnknownMembers(&e.Sender); len(m) != 1 || m[0].Key != "new_member" || string(m[0].Value) != `"kept"` {
		t.Errorf("unknown members of sender: %+v", m)
	}
	out, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, out, []byte(issueOpened))
	if !strings.Contains(string(out), `"created_at":1557933565`) || !strings.Contains(string(out), `9223372036854775807`) {
		t.Errorf("timestamp text or int64 id not kept: %s", out)
	}
}

func TestFixtureAbsentAndNullRequiredFields(t *testing.T) {
	// commits and before are required; one is absent, one null: neither comes
	// back as a zero value.
	in := `{"ref":"refs/heads/main","before":null,"head_commit":null,"base_ref":null}`
	var p payloads.PushEvent
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"ref":"refs/heads/main"}` {
		t.Errorf("got %s", out)
	}
	// Built in Go, every value field is written.
	out, err = json.Marshal(payloads.PushEvent{Ref: "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ref":"x","before":"","commits":[],"repository":{"id":0,"node_id":"","full_name":"","owner":{"login":"","id":0,"type":""},"created_at":"0001-01-01T00:00:00Z"}}`
	if string(out) != want {
		t.Errorf("zero PushEvent:\n got %s\nwant %s", out, want)
	}
}

func TestFixtureUnionMatch(t *testing.T) {
	for _, tc := range []struct {
		in       string
		team     bool
		wantErr  error
		wantPath string
	}{
		{`{"closed_by":{"id":1,"slug":"core"}}`, true, nil, ""},
		{`{"closed_by":{"login":"a","type":"User","id":2}}`, false, nil, ""},
		{`{"closed_by":{"login":"a","type":"Bot","id":2}}`, false, payloads.ErrType, ".closed_by"},
		{`{"closed_by":"core"}`, false, payloads.ErrType, ".closed_by"},
		{`{"closed_by":{"slug":}}`, false, payloads.ErrSyntax, ".closed_by"},
	} {
		var p payloads.IssuesClosedEvent
		err := p.UnmarshalJSON([]byte(tc.in)) // json.Unmarshal would report syntax errors itself
		if tc.wantErr != nil {
			var de *payloads.DecodeError
			if !errors.Is(err, tc.wantErr) || !errors.As(err, &de) || !strings.HasPrefix(de.Path, tc.wantPath) {
				t.Errorf("%s: error %v, want %v at %s", tc.in, err, tc.wantErr, tc.wantPath)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if (p.ClosedBy.Team != nil) != tc.team || (p.ClosedBy.User != nil) == tc.team {
			t.Errorf("%s: variant %+v", tc.in, p.ClosedBy)
		}
		out, _ := json.Marshal(p)
		sameJSON(t, out, []byte(tc.in))
	}
	if _, err := json.Marshal(payloads.Reviewer{}); !errors.Is(err, payloads.ErrEncode) {
		t.Errorf("a union with no variant set encoded: %v", err)
	}
	if _, err := json.Marshal(payloads.Reviewer{Team: &payloads.Team{}, User: &payloads.User{}}); !errors.Is(err, payloads.ErrEncode) {
		t.Errorf("a union with two variants set encoded: %v", err)
	}
}

func TestFixtureNullableElements(t *testing.T) {
	in := `{"id":"c","message":"m","timestamp":"2019-05-15T15:20:33.5+02:00","author":{"name":"n","email":null},"parents":["a",null],"added":[]}`
	var c payloads.Commit
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Parents) != 2 || *c.Parents[0] != "a" || c.Parents[1] != nil || c.Author.Email != nil {
		t.Errorf("decoded %+v", c)
	}
	out, _ := json.Marshal(c)
	sameJSON(t, out, []byte(in))
	if !strings.Contains(string(out), `"2019-05-15T15:20:33.5+02:00"`) {
		t.Errorf("timestamp text changed: %s", out)
	}
	if err := json.Unmarshal([]byte(`{"added":[null]}`), &c); !errors.Is(err, payloads.ErrType) {
		t.Errorf("null in a []string: %v, want ErrType", err)
	}
}

func TestFixtureFreeFormActions(t *testing.T) {
	body := `{"action":"on-demand-test","branch":"main","client_payload":{"k":[1]},"sender":{"login":"a","id":1,"type":"User"}}`
	p, err := payloads.Parse("repository_dispatch", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := p.(*payloads.RepositoryDispatchUnknownEvent)
	if !ok || u.Branch != "main" || u.GetAction() != "on-demand-test" || string(u.Raw) != body {
		t.Fatalf("Parse = %#v", p)
	}
	if !payloads.IsKnownEventName("repository_dispatch.on-demand-test") || payloads.IsKnownEventName("issues.on-demand-test") {
		t.Error("IsKnownEventName does not know free-form actions")
	}
	p, err = payloads.Parse("repository_dispatch", []byte(`{"action":"sample.collected","branch":"b"}`))
	if _, ok := p.(*payloads.RepositoryDispatchSampleCollectedEvent); !ok || err != nil {
		t.Errorf("Parse(sample.collected) = %T, %v", p, err)
	}
}

func TestFixtureNames(t *testing.T) {
	want := []string{"issues", "issues.closed", "issues.opened", "ping", "push", "repository_dispatch", "repository_dispatch.sample.collected"}
	if d := cmp.Diff(want, payloads.EmitterEventNames()); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
}

func TestFixtureReuseResets(t *testing.T) {
	var p payloads.IssuesOpenedEvent
	if err := json.Unmarshal([]byte(issueOpened), &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"action":"opened"}`), &p); err != nil {
		t.Fatal(err)
	}
	if out, err := json.Marshal(p); err != nil || string(out) != `{"action":"opened"}` {
		t.Errorf("decoding into a used value kept old fields: %s, %v", out, err)
	}
	if len(payloads.UnknownMembers(&p)) != 0 {
		t.Error("old unknown members kept")
	}
}

package payloads_test

import (
	"os"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/payloads"
)

// TestSecondSourceNames: the names the second source (@octokit/openapi) and the
// overlay (schema/overrides.yaml) brought are known, and SentBy says which
// server variants send each.
func TestSecondSourceNames(t *testing.T) {
	src, err := os.ReadFile("../schema/source/source.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "package: '@octokit/openapi'\n  version: 23.0.2") {
		t.Skip("schema/ is not imported with @octokit/openapi 23.0.2 (make spec-versions)")
	}
	for _, tc := range []struct {
		name    string
		sent    []string
		notSent []string
	}{
		{"pull_request.stacked", []string{"", "api.github.com", "ghec"}, []string{"ghes-3.19", "ghes-3.14"}},
		{"issues.field_added", []string{"api.github.com", "ghec"}, []string{"ghes-3.19"}},
		{"issues.field_removed", []string{"api.github.com"}, []string{"ghes-3.18"}},
		{"issue_comment.pinned", []string{"api.github.com"}, []string{"ghes-3.17"}},
		{"issue_comment.unpinned", []string{"api.github.com"}, []string{"ghes-3.16"}},
		{"code_scanning_alert.updated_assignment", []string{"api.github.com"}, []string{"ghes-3.19"}},
		{"dependabot_alert.assignees_changed", []string{"api.github.com"}, []string{"ghes-3.19"}},
		{"secret_scanning_alert.metadata_created", []string{"api.github.com"}, []string{"ghes-3.19"}},
		{"secret_scanning_alert.metadata_removed", []string{"api.github.com"}, []string{"ghes-3.19"}},
		// Self-hosted 3.17 and later, and ghec; never the main variant.
		{"dismissal_request_dependabot", []string{"ghec", "ghes-3.17", "ghes-3.18", "ghes-3.19"}, []string{"api.github.com", "ghes-3.16", "ghes-3.14"}},
		{"dismissal_request_dependabot.created", []string{"ghes-3.19"}, []string{"api.github.com"}},
		{"dismissal_request_dependabot.cancelled", []string{"ghes-3.19"}, []string{"api.github.com"}},
		{"dismissal_request_dependabot.response_submitted", []string{"ghes-3.19"}, []string{"api.github.com"}},
		// The overlay: known from the TypeScript types only, nothing recorded against a variant.
		{"issue_relates_to.relates_to_added", []string{"api.github.com", "ghes-3.19"}, nil},
		{"issue_relates_to.relates_to_removed", []string{"api.github.com"}, nil},
		{"label.archived", []string{"api.github.com"}, nil},
		{"label.unarchived", []string{"api.github.com"}, nil},
	} {
		if !payloads.IsKnownEventName(tc.name) || !isListed(tc.name) {
			t.Errorf("%s: not in the names tuple", tc.name)
		}
		for _, v := range tc.sent {
			if !payloads.SentBy(tc.name, v) {
				t.Errorf("SentBy(%q, %q) = false", tc.name, v)
			}
		}
		for _, v := range tc.notSent {
			if payloads.SentBy(tc.name, v) {
				t.Errorf("SentBy(%q, %q) = true", tc.name, v)
			}
		}
	}
}

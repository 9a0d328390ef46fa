package app

import (
	"forgehooks.dev/forgehooks/payloads/names"
	"strings"
	"testing"
)

// check's table and quirks, for an app subscribed to issues and
// pull_request with issues and pull_requests permissions.
func TestCheck(t *testing.T) {
	t.Parallel()
	info := appInfo{
		Events:      []string{"issues", "pull_request", "issue_comment", "check_run", "star"},
		Permissions: map[string]string{"issues": "none", "pull_requests": "write", "metadata": "read"},
	}
	tests := []struct {
		name    string
		arrives bool
		granted string
		problem string
		note    string
	}{
		{"pull_request.opened", true, "pull_requests: write", "", ""},
		// Either permission lets comments arrive; "none" is no permission.
		{"issue_comment.created", true, "pull_requests: write", "", ""},
		{"issues.opened", false, "", "lacks the issues permission", ""},
		{"check_run.completed", false, "", "lacks the checks permission the forge requires to send check_run", ""},
		{"check_suite", false, "", "lacks the checks permission the forge requires to send check_suite; the app is not subscribed to the check_suite event", ""},
		{"push", false, "", "lacks the contents permission", ""},
		{"star.created", true, "metadata: read", "", ""},
		{"installation.created", true, "", "", "unasked"},
		{"ping", true, "", "", "unasked"},
		{"sponsorship.created", false, "", "never to an app", ""},
		{"no_such_event.opened", false, "", "is not an event", ""},
		{"issues.no_such_action", false, "", "is not an event", ""},
		{"projects_v2_item.edited", false, "", "organization_projects", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := check(info, tt.name)
			if f.CanArrive != tt.arrives || f.Granted != tt.granted || !strings.Contains(f.Problem, tt.problem) || !strings.Contains(f.Note, tt.note) {
				t.Errorf("%+v\nwant arrives %v, granted %q, problem with %q, note with %q", f, tt.arrives, tt.granted, tt.problem, tt.note)
			}
			if (f.Problem == "") != f.CanArrive {
				t.Errorf("problem %q with CanArrive %v", f.Problem, f.CanArrive)
			}
			if line := f.String(); !strings.Contains(line, tt.name) || strings.HasPrefix(line, "ok") != f.CanArrive {
				t.Errorf("String %q", line)
			}
		})
	}
}

// Every event of the schema is in the permission table, sent unasked, or
// never sent to apps, but for those the table cannot say (checked for their
// subscription only, with a note).
func TestCheckTableCoversEvents(t *testing.T) {
	t.Parallel()
	unknown := map[string]bool{}
	for _, name := range names.All() {
		event, _, _ := strings.Cut(name, ".")
		_, inTable := eventNeeds[event]
		_, never := neverToApps[event]
		if !inTable && !never && !unasked[event] {
			unknown[event] = true
			if f := check(appInfo{Events: []string{event}}, event); !f.CanArrive || !strings.Contains(f.Note, "only the subscription") {
				t.Errorf("%s: %+v", event, f)
			}
		}
	}
	if len(unknown) > 5 {
		t.Errorf("%d events not in the table: %v", len(unknown), unknown)
	}
	t.Logf("checked for their subscription only: %v", unknown)
}

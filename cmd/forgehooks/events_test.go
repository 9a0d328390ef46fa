package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/payloads"
)

func TestEvents(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCmd(t, "", nil, "events")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !slices.Equal(lines, payloads.EmitterEventNames()) {
		t.Errorf("events printed %d names, not the %d of the tuple", len(lines), len(payloads.EmitterEventNames()))
	}
	for _, want := range []string{"branch_protection_rule", "issues.opened", "push", "workflow_run.requested"} {
		if !slices.Contains(lines, want) {
			t.Errorf("%q missing", want)
		}
	}

	code, out, _ = runCmd(t, "", nil, "events", "--json")
	var names []string
	if code != exitOK || json.Unmarshal([]byte(out), &names) != nil || !slices.Equal(names, lines) {
		t.Errorf("events --json: exit %d, %.200s", code, out)
	}

	code, out, _ = runCmd(t, "", nil, "events", "issues.")
	var want []string
	for _, n := range lines {
		if strings.HasPrefix(n, "issues.") {
			want = append(want, n)
		}
	}
	if code != exitOK || out != strings.Join(want, "\n")+"\n" || len(want) < 10 || !slices.Contains(want, "issues.opened") {
		t.Errorf("events issues.: exit %d, %q; want the %d issues actions", code, out, len(want))
	}
	code, out, _ = runCmd(t, "", nil, "events", "--json", "push")
	if code != exitOK || out != `["push"]`+"\n" {
		t.Errorf("events --json push: exit %d, %q", code, out)
	}
	if code, out, errOut := runCmd(t, "", nil, "events", "nope"); code != exitFailure || out != "" || !strings.Contains(errOut, `no event name starts with "nope"`) {
		t.Errorf("events nope: exit %d, stdout %q, stderr %q; want 1 and a message", code, out, errOut)
	}
	if code, _, _ := runCmd(t, "", nil, "events", "a", "b"); code != exitUsage {
		t.Errorf("events with two arguments: exit %d, want 2", code)
	}
}

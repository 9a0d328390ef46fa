package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/payloads"
)

func TestEvents(t *testing.T) {
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
	if code, _, _ := runCmd(t, "", nil, "events", "extra"); code != exitUsage {
		t.Errorf("events with an argument: exit %d, want 2", code)
	}
}

package payloads_test

import (
	"os"
	"strings"
	"testing"
)

// freeFormActions reports whether schema/events.yaml gives event free-form
// actions (other_actions_type), which not every published spec version does,
// so that a test expects them only where the schema has them.
func freeFormActions(t *testing.T, event string) bool {
	t.Helper()
	data, err := os.ReadFile("../schema/events.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "  - name: "); ok {
			in = name == event
		} else if in && strings.HasPrefix(line, "    other_actions_type: ") {
			return true
		}
	}
	return false
}

package delivery_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: package delivery depends on the standard library
// alone, so that any reader of stored deliveries can import it.
func TestStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "forgehooks.dev/forgehooks/delivery").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "forgehooks.dev/forgehooks/delivery" {
			t.Errorf("delivery depends on %s", p)
		}
	}
}

// TestSharedVocabulary: the inbox and the inspector speak delivery's types —
// the inbox is a delivery.Store and the inspector takes one — and the
// command line holds no adapter between them: cmd/forgehooks imports neither
// a second Record nor a Source type (neither exists any more).
func TestSharedVocabulary(t *testing.T) {
	out, err := exec.Command("go", "doc", "-short", "forgehooks.dev/forgehooks/inspector").CombinedOutput()
	if err != nil {
		t.Fatalf("go doc: %v\n%s", err, out)
	}
	for _, name := range []string{"type Record ", "type Source ", "type Attempt ", "type ListOptions ", "type Watchers "} {
		if strings.Contains(string(out), name) {
			t.Errorf("inspector still declares %s", name)
		}
	}
	out, err = exec.Command("go", "doc", "-short", "forgehooks.dev/forgehooks/inbox").CombinedOutput()
	if err != nil {
		t.Fatalf("go doc: %v\n%s", err, out)
	}
	for _, name := range []string{"type Record ", "type Attempt ", "type ListOptions ", "StatusHandled"} {
		if strings.Contains(string(out), name) {
			t.Errorf("inbox still declares %s", name)
		}
	}
	out, err = exec.Command("go", "list", "-f", "{{join .GoFiles \" \"}}", "forgehooks.dev/forgehooks/cmd/forgehooks").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "inspect_inbox.go") {
		t.Error("cmd/forgehooks still has inspect_inbox.go, an adapter between inbox and inspector")
	}
}

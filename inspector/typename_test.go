package inspector_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/inspector"
)

// TestDeriveTypeName checks the naming rule against the types package
// payloads decodes each event.action to (testdata/typenames.txt: "event
// action type" lines, written with payloads.Parse). Events without actions
// decode to EventEvent; for an event with actions and none given, payloads
// knows to say UnknownEvent, which the rule alone cannot.
func TestDeriveTypeName(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/typenames.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		fields := strings.Split(sc.Text(), " ")
		if len(fields) != 3 {
			t.Fatalf("bad line %q", sc.Text())
		}
		event, action, want := fields[0], fields[1], fields[2]
		if action == "" && strings.HasSuffix(want, "UnknownEvent") {
			continue
		}
		n++
		if got := inspector.DeriveTypeName(event, action); got != want {
			t.Errorf("DeriveTypeName(%q, %q) = %q, want %q", event, action, got, want)
		}
	}
	if n < 250 {
		t.Errorf("only %d names checked", n)
	}
	if got := inspector.DeriveTypeName("", "x"); got != "" {
		t.Errorf("no event: %q", got)
	}
}

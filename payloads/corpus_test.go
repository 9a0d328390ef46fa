package payloads_test

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/payloads"
)

// contractFile lists the names of the behaviour contract's events table, kept by the
// importer: 264 of them (counting the 8 of projects_v2_item, whose name has a
// digit; a count that drops them gets 256).
const contractFile = "../schema/names-original.txt"

// TestCorpusRoundTrip decodes every example delivery into its event.action
// struct and encodes it again: the two documents must be the same but for
// members that are null on one side and absent on the other.
func TestCorpusRoundTrip(t *testing.T) {
	all := corpus.All()
	if len(all) < 329 {
		t.Fatalf("corpus has %d examples, want at least the 329 public ones", len(all))
	}
	for _, ex := range all {
		t.Run(ex.Path, func(t *testing.T) {
			p, err := payloads.Parse(ex.Event, ex.Body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := payloads.PayloadName(p); got != ex.Name() {
				t.Errorf("PayloadName = %q, want %q", got, ex.Name())
			}
			typ := reflect.TypeOf(p).Elem().Name()
			if strings.HasSuffix(typ, "UnknownEvent") && payloads.IsKnownEventName(ex.Name()) && ex.Action != "" && isListed(ex.Name()) {
				t.Errorf("decoded into %s, not its action's struct", typ)
			}
			out, err := json.Marshal(p)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if d := jsonDiff(t, ex.Body, out); d != "" {
				t.Errorf("round trip differs (-original +re-encoded):\n%s", d)
			}
		})
	}
}

// isListed reports whether name is in the names tuple itself (a free-form action
// is known without being listed).
func isListed(name string) bool {
	names := payloads.EmitterEventNames()
	i := sort.SearchStrings(names, name)
	return i < len(names) && names[i] == name
}

func readContract(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(contractFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n := strings.TrimSpace(sc.Text()); n != "" && !strings.HasPrefix(n, "#") {
			names = append(names, n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestCorpusCoversOriginalNames: every name of the behaviour contract is decoded at
// least once by the corpus, public or synthetic.
func TestCorpusCoversOriginalNames(t *testing.T) {
	covered := map[string]bool{}
	for _, ex := range corpus.All() {
		covered[ex.Event] = true
		covered[ex.Name()] = true
	}
	for _, n := range readContract(t) {
		if !covered[n] {
			t.Errorf("no example decodes %q", n)
		}
	}
}

// TestNamesTuple: the names of the behaviour contract and the current spec's (as
// many as ../schema/events.yaml has events and actions), in the documented order
// (events sorted, each followed by its actions sorted), and not changeable by a
// caller.
func TestNamesTuple(t *testing.T) {
	names := payloads.EmitterEventNames()
	if want := schemaNameCount(t); len(names) != want {
		t.Errorf("%d names, the schema has %d", len(names), want)
	}
	have := map[string]bool{}
	for _, n := range names {
		if have[n] {
			t.Errorf("%q twice", n)
		}
		have[n] = true
	}
	contract := readContract(t)
	if len(contract) != 264 {
		t.Errorf("%s lists %d names, want 264", contractFile, len(contract))
	}
	for _, n := range contract {
		if !have[n] || !payloads.IsKnownEventName(n) {
			t.Errorf("%q of the behaviour contract is missing", n)
		}
	}
	// The documented order, checked as its definition says.
	var events []string
	actions := map[string][]string{}
	for _, n := range names {
		ev, act, ok := strings.Cut(n, ".")
		if !ok {
			events = append(events, ev)
			continue
		}
		if len(events) == 0 || events[len(events)-1] != ev {
			t.Fatalf("%q does not follow its event", n)
		}
		actions[ev] = append(actions[ev], act)
	}
	if !sort.StringsAreSorted(events) {
		t.Error("events are not sorted")
	}
	for ev, acts := range actions {
		if !sort.StringsAreSorted(acts) {
			t.Errorf("actions of %s are not sorted: %q", ev, acts)
		}
	}
	first := names[0]
	names[0] = "changed"
	if payloads.EmitterEventNames()[0] != first {
		t.Error("a caller changed the tuple")
	}
}

// schemaNameCount counts the event and event.action names of ../schema/events.yaml,
// so that a schema update needs no edit here.
func schemaNameCount(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("../schema/events.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Events []struct {
			Actions []struct{} `yaml:"actions"`
		} `yaml:"events"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range doc.Events {
		n += 1 + len(e.Actions)
	}
	return n
}

package webhookstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// examples maps each name, "event" and "event.action", to the corpus paths
// of its examples, in the order of corpus.Samples: the typical ones first (one
// sent to an app installation; for push, a push to a branch with commits), as
// 'forgehooks send --sample N' numbers them.
var examples = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, ex := range corpus.All() {
		for _, name := range []string{ex.Event, ex.Name()} {
			if _, ok := m[name]; !ok {
				for _, s := range corpus.Samples(name) {
					m[name] = append(m[name], s.Path)
				}
			}
		}
	}
	return m
})

// exampleHead is what Label reads of an example.
type exampleHead struct {
	Ref          *string           `json:"ref"`
	Deleted      bool              `json:"deleted"`
	Commits      []json.RawMessage `json:"commits"`
	Installation json.RawMessage   `json:"installation"`
	Action       string            `json:"action"`
}

// Label says what an example payload of event is, for a test's messages and
// a list of samples: "push to refs/heads/main, 1 commit, app installation",
// "pull_request.opened, no installation".
func Label(event string, payload []byte) string {
	var h exampleHead
	if json.Unmarshal(payload, &h) != nil {
		return event + ", not a JSON object"
	}
	var parts []string
	switch {
	case event == "push" && h.Ref != nil:
		what := "push to " + *h.Ref
		if h.Deleted {
			what = "deletion of " + *h.Ref
		}
		parts = append(parts, what, fmt.Sprintf("%d commit%s", len(h.Commits), map[bool]string{true: "", false: "s"}[len(h.Commits) == 1]))
	case h.Action != "":
		parts = append(parts, event+"."+h.Action)
	default:
		parts = append(parts, event)
	}
	if len(h.Installation) > 0 && string(h.Installation) != "null" {
		parts = append(parts, "app installation")
	} else {
		parts = append(parts, "no installation")
	}
	return strings.Join(parts, ", ")
}

// Payload returns the typical example payload of name, an event.action such
// as "issues.opened" or an event such as "push" (for an event with actions, an
// example of any action): one sent to an app installation when there is one,
// and for push a push to a branch with commits (Label says what each is). The payloads are the forge's public examples
// and, for names it publishes none of, ones written for this project from the
// forge's published schema of the name's payload; each is a compact JSON
// object, byte for byte a realistic delivery body. Every name of
// payloads.EmitterEventNames has at least one.
//
// The result is the caller's own copy. Payload panics when there is no example
// of name, with a message that lists those of its event; Names lists them all.
func Payload(name string) []byte {
	all := Payloads(name)
	if len(all) == 0 {
		panic(missing(name))
	}
	return all[0]
}

// Payloads returns every example payload of name (see Payload), the typical
// ones first, in a fixed order (that of 'forgehooks send --sample N'), or nil
// when there is none. The
// results are the caller's own copies.
func Payloads(name string) [][]byte {
	paths := examples()[name]
	if len(paths) == 0 {
		return nil
	}
	out := make([][]byte, len(paths))
	for i, p := range paths {
		out[i] = bytes.Clone(corpus.Body(p))
	}
	return out
}

// Names returns every name with at least one example, sorted as the forge's
// names tuple is: each event followed by its event.action names. The slice is
// the caller's own.
func Names() []string {
	m := examples()
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// missing is Payload's panic message for name.
func missing(name string) string {
	event, _, _ := strings.Cut(name, ".")
	var same []string
	for _, n := range Names() {
		if strings.HasPrefix(n, event+".") {
			same = append(same, n)
		}
	}
	if len(same) == 0 {
		return fmt.Sprintf("webhookstest: no example payload of %q; webhookstest.Names lists the %d names that have one", name, len(examples()))
	}
	return fmt.Sprintf("webhookstest: no example payload of %q; %s has examples of %s", name, event, strings.Join(same, ", "))
}

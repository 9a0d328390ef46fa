// Package corpus gives the tests, benchmarks and the command line the committed
// example delivery bodies: the forge's public example payloads and a few synthetic
// ones for names that have no public example. It is the one copy of them in the
// repository: package webhookstest hands them to users' tests through it, which
// is why it stays a leaf of the standard library (the packages webhookstest
// builds on use it in their own tests, so it cannot live in webhookstest).
package corpus

import (
	"embed"
	"encoding/json"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
)

//go:embed testdata
var files embed.FS

// MedianPush is the path of the corpus's median push (7,124 bytes): the payload
// of bench's HTTP load run, and of the benchmarks that mirror it.
const MedianPush = "examples/push/push-6.json"

// Body returns the body of the example at path (as Example.Path gives it), or
// nil when there is none. The bytes are shared and must not be modified.
func Body(path string) []byte {
	b, err := files.ReadFile("testdata/" + path)
	if err != nil {
		return nil
	}
	return b
}

// Example is one delivery body of the corpus.
type Example struct {
	// Event is the event name, as the forge sends it in its event header.
	Event string
	// Action is the payload's top-level "action", or "" when it has none.
	Action string
	// Path is the file's path inside the corpus, for messages.
	Path string
	// Synthetic reports whether the body was written for this project rather than
	// taken from the forge's public examples.
	Synthetic bool
	// Generated reports a synthetic body that internal/samplegen made from the
	// schema (cmd/gensamples), for a name that has no other example; it is valid
	// for the schema, not taken from a delivery.
	Generated bool
	// Body is the delivery body, byte for byte as committed.
	Body []byte

	rank int // typical's
}

// Name returns "event.action", or "event" when the example has no action.
func (e Example) Name() string {
	if e.Action == "" {
		return e.Event
	}
	return e.Event + "." + e.Action
}

// All returns every example, public ones first, then those written for this
// project, then those generated from the schema, each group sorted by path. The
// result is a fresh slice; the bodies are shared and must not be modified.
func All() []Example { return slices.Clone(all()) }

// all reads the examples once: the command line and tests ask for them often.
var all = sync.OnceValue(func() []Example {
	var out []Example
	for _, dir := range []string{"testdata/examples", "testdata/synthetic", "testdata/generated"} {
		paths, _ := fs.Glob(files, dir+"/*/*.json")
		sort.Strings(paths)
		for _, p := range paths {
			body, err := files.ReadFile(p)
			if err != nil {
				panic(err) // embedded: cannot happen
			}
			var head struct {
				Action *string `json:"action"`
			}
			_ = json.Unmarshal(body, &head)
			ex := Example{
				Event:     path.Base(path.Dir(p)),
				Path:      strings.TrimPrefix(p, "testdata/"),
				Synthetic: dir != "testdata/examples",
				Generated: dir == "testdata/generated",
				Body:      body,
			}
			if head.Action != nil {
				ex.Action = *head.Action
			}
			ex.rank = typical(ex)
			out = append(out, ex)
		}
	}
	return out
})

// Public returns the forge's public examples only.
func Public() []Example {
	var out []Example
	for _, e := range All() {
		if !e.Synthetic {
			out = append(out, e)
		}
	}
	return out
}

// Samples returns the examples of name, an "event" (every example of the
// event, whatever its action) or an "event.action", the typical ones first
// and otherwise in All's order: the one order of samples that
// webhookstest.Payloads and 'forgehooks send --sample N' both give, so that
// sample N is the same bytes in a test and on the command line. An example
// is typical when it is sent to an app installation (the payload names
// one), and for push, when it is a push to a branch with commits (the
// forge's first push examples are tag pushes with none, which a test of push
// handling rarely wants). The result is a fresh slice, nil when there is no
// example; the bodies are shared and must not be modified.
func Samples(name string) []Example {
	event, action, hasAction := strings.Cut(name, ".")
	var out []Example
	for _, ex := range all() {
		if ex.Event == event && (!hasAction || ex.Action == action) {
			out = append(out, ex)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].rank > out[j].rank })
	return out
}

// typical ranks an example by how much it looks like a usual delivery (see
// Samples).
func typical(ex Example) int {
	var h struct {
		Ref          *string           `json:"ref"`
		Deleted      bool              `json:"deleted"`
		Commits      []json.RawMessage `json:"commits"`
		Installation json.RawMessage   `json:"installation"`
	}
	if json.Unmarshal(ex.Body, &h) != nil {
		return 0
	}
	n := 0
	if len(h.Installation) > 0 && string(h.Installation) != "null" {
		n++
	}
	if ex.Event == "push" && h.Ref != nil && strings.HasPrefix(*h.Ref, "refs/heads/") && !h.Deleted && len(h.Commits) > 0 {
		n += 2
	}
	return n
}

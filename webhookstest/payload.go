package webhookstest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"

	"forgehooks.dev/forgehooks/internal/corpus"
)

// examples maps each name, "event" and "event.action", to the corpus paths
// of its examples, in corpus order: the forge's public examples first, then
// those written for this project where the forge publishes none.
var examples = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, ex := range corpus.All() {
		m[ex.Event] = append(m[ex.Event], ex.Path)
		if ex.Action != "" {
			m[ex.Name()] = append(m[ex.Name()], ex.Path)
		}
	}
	return m
})

// Payload returns the first example payload of name, an event.action such as
// "issues.opened" or an event such as "push" (for an event with actions, its
// first example of any action). The payloads are the forge's public examples
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

// Payloads returns every example payload of name (see Payload), in a fixed
// order (that of 'forgehooks send --sample N'), or nil when there is none. The
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

package payloads_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	genmodel "forgehooks.dev/forgehooks/gen/model"
	"forgehooks.dev/forgehooks/internal/samplegen"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/webhookstest"
)

// TestEveryNameHasASample: every name of the names tuple has a sample in
// webhookstest (a public example, a hand-written one, or one generated from the
// schema), and every sample decodes into its name's struct and round-trips.
func TestEveryNameHasASample(t *testing.T) {
	names := payloads.EmitterEventNames()
	if len(names) == 0 {
		t.Fatal("no names")
	}
	for _, name := range names {
		samples := webhookstest.Payloads(name)
		if len(samples) == 0 {
			t.Errorf("%s: no sample", name)
			continue
		}
		event, _, hasAction := strings.Cut(name, ".")
		for i, body := range samples {
			p, err := payloads.Parse(event, body)
			if err != nil {
				t.Errorf("%s sample %d: Parse: %v", name, i, err)
				continue
			}
			got := payloads.PayloadName(p)
			if hasAction && got != name || !hasAction && got != name && !strings.HasPrefix(got, name+".") {
				t.Errorf("%s sample %d: PayloadName %q", name, i, got)
			}
			// A free-form action (repository_dispatch's) is known without being
			// listed, and has the event's unknown-action type by design.
			if typ := reflect.TypeOf(p).Elem().Name(); strings.HasSuffix(typ, "UnknownEvent") && isListed(got) {
				t.Errorf("%s sample %d: decoded into %s", name, i, typ)
			}
			out, err := json.Marshal(p)
			if err != nil {
				t.Errorf("%s sample %d: Marshal: %v", name, i, err)
				continue
			}
			if d := jsonDiff(t, body, out); d != "" {
				t.Errorf("%s sample %d: round trip differs (-sample +re-encoded):\n%s", name, i, d)
			}
		}
	}
}

// FuzzSynthesized feeds payloads that internal/samplegen synthesizes from the
// schema, for any name and seed, to Parse: each is valid for the schema, so it
// decodes into its name's struct without error and round-trips.
func FuzzSynthesized(f *testing.F) {
	s, err := genmodel.Load("../schema")
	if err != nil {
		f.Fatal(err)
	}
	names := samplegen.Names(s)
	for i := range names {
		f.Add(uint(i), uint64(i))
	}
	f.Fuzz(func(t *testing.T, i uint, seed uint64) {
		name := names[i%uint(len(names))]
		body, err := samplegen.Payload(s, name, seed)
		if err != nil {
			t.Fatalf("%s seed %d: %v", name, seed, err)
		}
		event, _, _ := strings.Cut(name, ".")
		p, err := payloads.Parse(event, body)
		if err != nil {
			t.Fatalf("%s seed %d: Parse: %v\n%s", name, seed, err, body)
		}
		if got := payloads.PayloadName(p); got != name {
			t.Fatalf("%s seed %d: PayloadName %q", name, seed, got)
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s seed %d: Marshal: %v", name, seed, err)
		}
		if d := jsonDiff(t, body, out); d != "" {
			t.Fatalf("%s seed %d: round trip differs:\n%s", name, seed, d)
		}
	})
}

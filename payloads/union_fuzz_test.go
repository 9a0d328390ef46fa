package payloads_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"forgehooks.dev/forgehooks/payloads"
)

// unions are the union types FuzzUnions decodes into, made fresh for each
// input. They are those of the core objects (users, teams, rules, settings)
// that every published spec version the importer accepts has (5.3.2 to the
// pinned one, CONTRIBUTING.md's "make spec-versions"): the union of an app's
// owner and that of an issue's label are newer.
var unions = []func() any{
	func() any { return new(payloads.DeploymentPayload) },
	func() any { return new(payloads.DeploymentReviewer) },
	func() any { return new(payloads.OrganizationCustomPropertyDefaultValue) },
	func() any { return new(payloads.PullRequestRequestedReviewer) },
	func() any { return new(payloads.RepositoryOrganization) },
	func() any { return new(payloads.RepositoryRule) },
	func() any { return new(payloads.WebhookConfigInsecureSSL) },
}

// variants counts the fields of a union that are set.
func variants(u any) int {
	v := reflect.ValueOf(u).Elem()
	n := 0
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			n++
		}
	}
	return n
}

// FuzzUnions decodes arbitrary JSON into each union type. Decoding never
// panics; invalid JSON is an error; a value decoded from anything but null
// has exactly one variant set; and it encodes to valid JSON that decodes to
// the same variant and encodes again to the same bytes.
func FuzzUnions(f *testing.F) {
	for i := range unions {
		for _, seed := range []string{
			`"x"`, `1`, `-1.5e3`, `true`, `null`, `[]`, `["a","b"]`, `{}`,
			`{"login":"octocat","id":1,"type":"User"}`,
			`{"slug":"team","name":"Team","id":2}`,
			`{"name":"bug","color":"d73a4a","default":true}`,
			`{"type":"creation"}`,
			`{"type":"pull_request","parameters":{"required_approving_review_count":1}}`,
			`{"type":"required_status_checks","parameters":{"required_status_checks":[{"context":"ci"}]}}`,
			`{"login":"octocat","slug":"team"}`,
			`"0"`, `0`, `{"type":1}`, `{"a":`, `"\ud800"`,
		} {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		u := unions[int(which)%len(unions)]()
		err := json.Unmarshal(data, u)
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("%T accepted invalid JSON %q", u, data)
			}
			return
		}
		if err != nil {
			return // valid JSON that no variant takes: an error is right
		}
		n := variants(u)
		if isNull := bytes.Equal(bytes.TrimSpace(data), []byte("null")); isNull && n > 1 || !isNull && n != 1 {
			t.Fatalf("%T from %q has %d variants set", u, data, n)
		}
		if n == 0 {
			return
		}
		out, err := json.Marshal(u)
		if err != nil {
			t.Fatalf("%T from %q does not encode: %v", u, data, err)
		}
		again := unions[int(which)%len(unions)]()
		if err := json.Unmarshal(out, again); err != nil {
			t.Fatalf("%T: %q encoded as %q, which does not decode: %v", u, data, out, err)
		}
		if a, b := setField(u), setField(again); a != b {
			t.Fatalf("%T: %q decoded as variant %s, its encoding %q as %s", u, data, a, out, b)
		}
		out2, err := json.Marshal(again)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("%T: encoding is not stable: %q then %q (%v)", u, out, out2, err)
		}
	})
}

// setField names the first field of a union that is set.
func setField(u any) string {
	v := reflect.ValueOf(u).Elem()
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			return v.Type().Field(i).Name
		}
	}
	return ""
}

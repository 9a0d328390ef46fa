package payloads_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/payloads"
)

// referenceInstallationID is what encoding/json says: body decoded into a
// map, its "installation" member into another, and that one's "id" member an
// integer written as one (keys match exactly, the last duplicate wins).
func referenceInstallationID(body []byte) (int64, bool) {
	var top, inst map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil || json.Unmarshal(top["installation"], &inst) != nil {
		return 0, false
	}
	id, err := strconv.ParseInt(string(inst["id"]), 10, 64)
	return id, err == nil
}

func TestInstallationID(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int64
		ok         bool
	}{
		{"app delivery", `{"action":"opened","installation":{"id":123,"node_id":"MDIz"}}`, 123, true},
		{"no installation", `{"ref":"refs/heads/main"}`, 0, false},
		{"null installation", `{"installation":null}`, 0, false},
		{"id not an integer", `{"installation":{"id":"123"}}`, 0, false},
		{"id out of range", `{"installation":{"id":99999999999999999999}}`, 0, false},
		{"an id deeper down is not it", `{"repository":{"installation":{"id":5}},"installation":{"id":6}}`, 6, true},
		{"not JSON", `{"installation":{"id":1}`, 0, false},
		{"not an object", `[{"installation":{"id":1}}]`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, ok := payloads.InstallationID([]byte(tc.body))
			if id != tc.want || ok != tc.ok {
				t.Errorf("InstallationID = %d, %v; want %d, %v", id, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestInstallationIDCorpus checks every corpus delivery against encoding/json
// and against the typed payload's GetInstallation, where the type has one.
func TestInstallationIDCorpus(t *testing.T) {
	withID := 0
	for _, ex := range corpus.All() {
		id, ok := payloads.InstallationID(ex.Body)
		wantID, wantOK := referenceInstallationID(ex.Body)
		if id != wantID || ok != wantOK {
			t.Errorf("%s: InstallationID = %d, %v; encoding/json says %d, %v", ex.Name(), id, ok, wantID, wantOK)
		}
		if ok {
			withID++
		}
		p, err := payloads.Parse(ex.Event, ex.Body)
		if err != nil {
			t.Fatalf("%s: %v", ex.Name(), err)
		}
		if g, has := p.(interface {
			GetInstallation() *payloads.SimpleInstallation
		}); has && g.GetInstallation() != nil {
			if got := g.GetInstallation().ID; !ok || got != id {
				t.Errorf("%s: GetInstallation().ID = %d, InstallationID = %d, %v", ex.Name(), got, id, ok)
			}
		}
	}
	if withID == 0 {
		t.Fatal("no corpus delivery has an installation: the test checks nothing")
	}
	t.Logf("%d deliveries have an installation id", withID)
}

func FuzzInstallationID(f *testing.F) {
	for _, ex := range corpus.Public()[:40] {
		f.Add(ex.Body)
	}
	f.Add([]byte(`{"installation":{"id":1,"id":-9223372036854775808}}`))
	f.Add([]byte(`{"inst\u0061llation":{"id":1e2}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		id, ok := payloads.InstallationID(body)
		if wantID, wantOK := referenceInstallationID(body); id != wantID || ok != wantOK {
			t.Fatalf("InstallationID(%q) = %d, %v; encoding/json says %d, %v", body, id, ok, wantID, wantOK)
		}
	})
}

// ExampleInstallationID finds the installation a delivery is for before any
// typed decode.
func ExampleInstallationID() {
	body := []byte(`{"action":"opened","installation":{"id":42,"node_id":"MDQy"},"issue":{"number":1}}`)
	if id, ok := payloads.InstallationID(body); ok {
		fmt.Println("installation", id)
	}
	// Output: installation 42
}

// Example_getters reads members of a typed payload through its getters,
// which are nil-safe: an absent sender gives nil, and its name "".
func Example_getters() {
	p, err := payloads.Parse("push", []byte(`{"ref":"refs/heads/main","installation":{"id":7},"repository":{"full_name":"o/r"}}`))
	if err != nil {
		panic(err)
	}
	push := p.(*payloads.PushEvent)
	fmt.Println(push.GetInstallation().ID, push.GetRepository().FullName)
	fmt.Printf("%q %q\n", push.GetSender().GetName(), push.GetBaseRef())
	// Output:
	// 7 o/r
	// "" ""
}

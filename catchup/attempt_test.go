package catchup

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/forgetest"
)

func TestDecodeAttempts(t *testing.T) {
	t.Parallel()
	// the example of the published description, verbatim
	var desc struct {
		Components struct {
			Examples map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"examples"`
		} `json:"components"`
	}
	if err := json.Unmarshal(forgetest.DescriptionJSON(), &desc); err != nil {
		t.Fatal(err)
	}
	got, err := decodeAttempts(desc.Components.Examples["hook-delivery-items"].Value)
	if err != nil {
		t.Fatal(err)
	}
	want := []Attempt{
		{ID: 12345678, GUID: "0b989ba4-242f-11e5-81e1-c7b6966d2516", DeliveredAt: time.Date(2019, 6, 3, 0, 57, 16, 0, time.UTC), Status: "OK", StatusCode: 200, Event: "issues", Action: "opened"},
		{ID: 123456789, GUID: "0b989ba4-242f-11e5-81e1-c7b6966d2516", DeliveredAt: time.Date(2019, 6, 4, 0, 57, 16, 0, time.UTC), Redelivery: true, Status: "OK", StatusCode: 200, Event: "issues", Action: "opened"},
	}
	if !slices.EqualFunc(got, want, func(a, b Attempt) bool {
		same := a.DeliveredAt.Equal(b.DeliveredAt)
		a.DeliveredAt = b.DeliveredAt
		return same && a == b
	}) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, in := range []string{`[]`, ` [] `, "[\n]"} {
		if got, err := decodeAttempts([]byte(in)); err != nil || len(got) != 0 {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	for _, in := range []string{``, `null`, `{}`, `"x"`, `[1]`, `[{"id":0,"guid":"g","delivered_at":"2019-06-03T00:57:16Z","status":"","status_code":0,"event":"e"}]`, `[{"id":1,"guid":"","delivered_at":"2019-06-03T00:57:16Z","status":"","status_code":0,"event":"e"}]`, `[] []`} {
		if _, err := decodeAttempts([]byte(in)); !errors.Is(err, errMalformed) {
			t.Errorf("%q: err = %v, want errMalformed", in, err)
		}
	}
}

// The fields decoding requires are among those the description requires:
// a conforming forge never fails it.
func TestRequiredFieldsFollowDescription(t *testing.T) {
	t.Parallel()
	d, err := forgetest.ParseDescription()
	if err != nil {
		t.Fatal(err)
	}
	schema := d.Schema("hook-delivery-item")
	_, err = decodeAttempts([]byte(`[{}]`))
	msg := err.Error()
	required := strings.Split(msg[strings.Index(msg, "missing ")+len("missing "):], ", ")
	for _, f := range required {
		if !slices.Contains(schema.Required, f) {
			t.Errorf("decoding requires %q; the description does not", f)
		}
	}
	if len(required) < 5 {
		t.Errorf("decoding requires only %q", required)
	}
}

// FuzzDecodeAttempts: any body decodes to attempts that carry what the
// decisions need, or is an errMalformed error; it never panics.
func FuzzDecodeAttempts(f *testing.F) {
	f.Add([]byte(`[{"id":1,"guid":"g","delivered_at":"2019-06-03T00:57:16Z","redelivery":false,"duration":0.1,"status":"OK","status_code":200,"event":"push","action":null}]`))
	f.Add([]byte(`[{"id":1}]`))
	f.Add([]byte(`[null,{}]`))
	f.Add([]byte(`{"message":"Not Found"}`))
	f.Add([]byte(`[{"id":9e99,"guid":1}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeAttempts(body)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v is not errMalformed", err)
			}
			return
		}
		for _, a := range got {
			if a.ID <= 0 || a.GUID == "" || a.DeliveredAt.IsZero() {
				t.Fatalf("decoded an attempt without what decisions need: %+v", a)
			}
		}
	})
}

// The default API URL is the server the published description names.
func TestDefaultAPIURLFollowsDescription(t *testing.T) {
	t.Parallel()
	d, err := forgetest.ParseDescription()
	if err != nil {
		t.Fatal(err)
	}
	if DefaultAPIURL != d.ServerURL() {
		t.Errorf("DefaultAPIURL %q, the description's server %q", DefaultAPIURL, d.ServerURL())
	}
}

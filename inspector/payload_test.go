package inspector_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inspector"
)

// countingStore counts the payloads its Store is asked for.
type countingStore struct {
	delivery.Store
	gets atomic.Int32
}

func (s *countingStore) Get(ctx context.Context, id string) (delivery.Record, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, id)
}

// TestPayloadsLoadForTheDetailOnly: the list and its search read no payload
// (the rows' repository and sender come with the records); the detail view
// loads one and carries its first DetailPayloadMax bytes, saying so; the
// download has it whole.
func TestPayloadsLoadForTheDetailOnly(t *testing.T) {
	t.Parallel()
	ring := inspector.NewRing(inspector.RingOptions{})
	big := `{"action":"opened","repository":{"full_name":"o/big"},"sender":{"login":"someone"},"pad":"` + strings.Repeat("x", 3<<20) + `"}`
	ring.Add(result("big", 200, true, big))
	ring.Add(result("small", 200, true, `{"action":"opened","repository":{"full_name":"o/small"}}`))
	st := &countingStore{Store: ring}
	insp := inspector.New(inspector.Options{Store: st})
	defer insp.Close()
	var list struct {
		Rows []struct{ ID, Repository, Sender string }
	}
	for _, q := range []string{"", "someone", "o/small", "nothing"} {
		if code := getJSON(t, insp, "/api/deliveries?q="+q, &list); code != 200 {
			t.Fatalf("list %q: %d", q, code)
		}
	}
	getJSON(t, insp, "/api/deliveries?q=someone", &list)
	if len(list.Rows) != 1 || list.Rows[0].ID != "big" || list.Rows[0].Repository != "o/big" || list.Rows[0].Sender != "someone" {
		t.Errorf("search: %+v", list.Rows)
	}
	if n := st.gets.Load(); n != 0 {
		t.Errorf("the list and its searches loaded %d payloads", n)
	}
	var d struct {
		Payload   string
		Size      int
		Truncated bool
		TypeName  string
	}
	if code := getJSON(t, insp, "/api/delivery?key=d:big", &d); code != 200 {
		t.Fatal(code)
	}
	if len(d.Payload) != inspector.DetailPayloadMax || d.Size != len(big) || !d.Truncated || d.TypeName != "*payloads.IssuesOpenedEvent" {
		t.Errorf("detail: %d bytes of %d, truncated %v, type %q", len(d.Payload), d.Size, d.Truncated, d.TypeName)
	}
	getJSON(t, insp, "/api/delivery?key=d:small", &d)
	if d.Truncated || d.Size != len(d.Payload) {
		t.Errorf("small detail: truncated %v, %d of %d", d.Truncated, len(d.Payload), d.Size)
	}
	rec := httptest.NewRecorder()
	insp.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/payload?key=d:big", nil))
	if b, _ := io.ReadAll(rec.Body); rec.Code != 200 || string(b) != big {
		t.Errorf("download: %d, %d bytes", rec.Code, len(b))
	}
	if n := st.gets.Load(); n != 3 {
		t.Errorf("%d payloads loaded, want 3 (two details, a download)", n)
	}
}

package delivery_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/delivery"
)

func TestStatusValid(t *testing.T) {
	for _, s := range delivery.Statuses() {
		if !s.Valid() {
			t.Errorf("%q not valid", s)
		}
	}
	for _, s := range []delivery.Status{"", "HANDLED", "ok"} {
		if s.Valid() {
			t.Errorf("%q valid", s)
		}
	}
}

func TestRecordName(t *testing.T) {
	for _, tc := range []struct {
		r    delivery.Record
		want string
	}{
		{delivery.Record{Name: "push"}, "push"},
		{delivery.Record{Name: "issues", Action: "opened"}, "issues.opened"},
	} {
		if got := tc.r.PayloadName(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
	r := delivery.Record{Attempts: []delivery.Attempt{{Number: 1, Err: "a"}, {Number: 2, Err: "b"}}}
	if r.LastError() != "b" {
		t.Errorf("LastError %q", r.LastError())
	}
}

// TestRecordJSON: a Record survives encoding/json, and one encoded before
// the event name's field was called Name (key "Event") keeps its name.
func TestRecordJSON(t *testing.T) {
	rec := delivery.Record{ID: "d-1", Name: "issues", Action: "opened", Status: delivery.StatusDead, Seq: 7,
		Attempts: []delivery.Attempt{{Number: 1, Err: "boom"}}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"Event"`) {
		t.Errorf("encoded with the former key: %s", b)
	}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{string(b), "issues"},
		{`{"ID":"d-1","Event":"push","Status":"handled"}`, "push"},
		{`{"ID":"d-1","event":"push"}`, "push"},
		{`{"Name":"issues","Event":"push"}`, "issues"},
		{`{"Name":"","Event":"push"}`, "push"},
		{`{"ID":"d-1"}`, ""},
	} {
		var got delivery.Record
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got.Name != tc.want {
			t.Errorf("%s: Name %q, want %q", tc.in, got.Name, tc.want)
		}
	}
	var got delivery.Record
	if err := json.Unmarshal(b, &got); err != nil || got.ID != rec.ID || got.Action != rec.Action || got.Status != rec.Status || got.Seq != rec.Seq || len(got.Attempts) != 1 || got.Attempts[0].Err != "boom" {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	if err := json.Unmarshal([]byte(`{"Name":1}`), &got); err == nil {
		t.Error("a number as Name decoded")
	}
	var recs []delivery.Record
	if err := json.Unmarshal([]byte(`[{"Event":"a"},{"Name":"b"}]`), &recs); err != nil || len(recs) != 2 || recs[0].Name != "a" || recs[1].Name != "b" {
		t.Errorf("slice: %+v, %v", recs, err)
	}
}

func TestWatchers(t *testing.T) {
	var w delivery.Watchers
	if w.Active() {
		t.Fatal("zero Watchers active")
	}
	var mu sync.Mutex
	var got []string
	stop := w.Watch(func(r delivery.Record) { mu.Lock(); got = append(got, r.ID); mu.Unlock() })
	stop2 := w.Watch(func(r delivery.Record) { mu.Lock(); got = append(got, "2"+r.ID); mu.Unlock() })
	w.Notify(delivery.Record{ID: "a"})
	stop()
	w.Notify(delivery.Record{ID: "b"})
	stop2()
	w.Notify(delivery.Record{ID: "c"})
	if w.Active() {
		t.Error("active after every stop")
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "2a" || got[2] != "2b" {
		t.Errorf("got %v", got)
	}
}

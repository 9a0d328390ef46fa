package delivery_test

import (
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
		{delivery.Record{Event: "push"}, "push"},
		{delivery.Record{Event: "issues", Action: "opened"}, "issues.opened"},
	} {
		if got := tc.r.Name(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
	r := delivery.Record{Attempts: []delivery.Attempt{{Number: 1, Err: "a"}, {Number: 2, Err: "b"}}}
	if r.LastError() != "b" {
		t.Errorf("LastError %q", r.LastError())
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

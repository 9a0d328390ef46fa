package inspector_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
)

// FuzzListQuery sends the list API any filter and cursor: it answers 200 with
// a list (a bad cursor reads as "from the newest"), never panics, and never
// returns more rows than asked or a row twice.
func FuzzListQuery(f *testing.F) {
	insp := inspector.New(inspector.Options{MaxRecords: 20, MaxRejected: 5})
	for i := range 30 {
		res := webhooks.Result{ID: fmt.Sprint(i), Name: "issues", Action: "opened", Status: 200, Verified: true,
			Payload: []byte(`{"action":"opened"}`), ReceivedAt: time.Unix(int64(i), 0)}
		if i%4 == 0 {
			res.Verified, res.Payload, res.Status, res.Err = false, nil, 400, errors.New("bad signature")
		}
		insp.OnResult(res)
	}
	for _, seed := range [][4]string{
		{"", "", "", ""}, {"issues.opened", "handled", "1", "10-3"}, {"", "rejected", "", "end-2"},
		{".", "x", "é", "-"}, {"a.b.c", "", "", "99999999999999999999-end"}, {"", "", "", "3-4-5"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3], 5)
	}
	f.Fuzz(func(t *testing.T, event, status, q, before string, limit int) {
		v := url.Values{"event": {event}, "status": {status}, "q": {q}, "before": {before}, "limit": {fmt.Sprint(limit)}}
		rec := httptest.NewRecorder()
		insp.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/api/deliveries?"+v.Encode(), nil))
		if rec.Code != 200 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var p struct {
			Rows []struct{ Key string }
			Next string
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		max := limit
		if max <= 0 || max > 500 {
			max = 50
		}
		if len(p.Rows) > max {
			t.Fatalf("%d rows for limit %d", len(p.Rows), limit)
		}
		seen := map[string]bool{}
		for _, r := range p.Rows {
			if seen[r.Key] {
				t.Fatalf("row %s twice", r.Key)
			}
			seen[r.Key] = true
		}
	})
}

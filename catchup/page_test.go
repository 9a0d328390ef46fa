package catchup

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func pageOf(n int, status string) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":%d,"guid":"g-%d","delivered_at":"2026-03-14T11:00:00Z","status":%q,"status_code":500,"event":"push"}`, i+1, i+1, status)
	}
	b.WriteString("]")
	return []byte(b.String())
}

// TestDecodePageBounds: a page of more attempts than asked for is refused
// (ErrEntryCap), text fields are cut to maxFieldBytes, and a page decodes
// as decodeAttempts decodes it.
func TestDecodePageBounds(t *testing.T) {
	t.Parallel()
	if _, err := decodePage(pageOf(101, "x"), perPage); !errors.Is(err, ErrEntryCap) {
		t.Errorf("101 attempts: %v, want ErrEntryCap", err)
	}
	got, err := decodePage(pageOf(100, strings.Repeat("é", 10<<10)), perPage)
	if err != nil || len(got) != 100 {
		t.Fatalf("100 attempts: %d, %v", len(got), err)
	}
	if n := len(got[0].Status); n > maxFieldBytes+len("…") {
		t.Errorf("a 20 KB status kept as %d bytes", n)
	}
	want, _ := decodeAttempts(pageOf(3, "OK"))
	if got, err := decodePage(pageOf(3, "OK"), perPage); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decodePage = %v, %v; decodeAttempts = %v", got, err, want)
	}
	for _, in := range []string{``, `null`, `{}`, `[1]`, `[] []`, `[{"id":1}`} {
		if _, err := decodePage([]byte(in), perPage); !errors.Is(err, errMalformed) {
			t.Errorf("%q: %v, want errMalformed", in, err)
		}
	}
}

// TestWindowCap: a window keeps one Entry per guid, counts every attempt,
// and refuses a guid past its max.
func TestWindowCap(t *testing.T) {
	t.Parallel()
	w := &window{max: 2, byGUID: map[string]int{}}
	at := time.Date(2026, 3, 14, 11, 0, 0, 0, time.UTC)
	for i, g := range []string{"a", "b", "a", "b"} {
		if !w.add(Attempt{ID: int64(i + 1), GUID: g, DeliveredAt: at.Add(time.Duration(i) * time.Minute), StatusCode: 500}) {
			t.Fatalf("attempt %d refused", i)
		}
	}
	if w.add(Attempt{ID: 9, GUID: "c", DeliveredAt: at}) {
		t.Error("a third guid kept past max 2")
	}
	if len(w.entries) != 2 || w.attempts != 4 || w.entries[0].Attempts != 2 || w.entries[0].Latest.ID != 3 {
		t.Errorf("window %+v", w)
	}
}

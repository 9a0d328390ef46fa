package stored

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"

	"forgehooks.dev/forgehooks/delivery"
)

// seenMirror has the members of the inbox's dedupe record (inbox.seenID),
// for comparing SeenRecord with encoding/json.
type seenMirror struct {
	Digest string `json:"d"`
	Seq    uint64 `json:"s,omitempty"`
	ID     string `json:"id,omitempty"`
}

func TestSeenRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []seenMirror{
		{Digest: "ab12", Seq: 7, ID: "d-1"},
		{Digest: "ab12", Seq: 7},
		{Digest: "ab12", ID: "0b1a7f00-9c1e-11f0-8a4e-3d2f0c1b5a77"},
		{Digest: "ab12"},
		{ID: `a "quoted" \ id`},
		{ID: "<tag>&", Seq: 1},
		{ID: "tab\there, ünïcode, \xff bad"},
		{Seq: 18446744073709551615},
	} {
		want, _ := json.Marshal(tc)
		if tc.Digest == "" {
			// Marshal writes "d":"" (no omitempty there); a missing d reads
			// back the same.
			want = bytes.Replace(want, []byte(`"d":"",`), nil, 1)
			want = bytes.Replace(want, []byte(`"d":""`), nil, 1)
		}
		got := SeenRecord(tc.Digest, tc.Seq, tc.ID)
		if !bytes.Equal(got, want) {
			t.Errorf("SeenRecord(%q, %d, %q) = %s, want %s", tc.Digest, tc.Seq, tc.ID, got, want)
		}
		var back seenMirror
		// Invalid UTF-8 reads back as U+FFFD, as from Marshal.
		if err := json.Unmarshal(got, &back); err != nil || back != tc && utf8.ValidString(tc.ID) {
			t.Errorf("read back %+v, %v; want %+v", back, err, tc)
		}
	}
}

// FuzzSeenRecord: whatever the id and digest, SeenRecord is valid JSON
// that reads back as encoding/json reads Marshal's output.
func FuzzSeenRecord(f *testing.F) {
	f.Add("ab12", uint64(7), "d-1")
	f.Add("", uint64(0), "\"<\\\x00\xff")
	f.Fuzz(func(t *testing.T, digest string, seq uint64, id string) {
		got := SeenRecord(digest, seq, id)
		var a, b seenMirror
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		want, _ := json.Marshal(seenMirror{Digest: digest, Seq: seq, ID: id})
		if err := json.Unmarshal(want, &b); err != nil || a != b {
			t.Fatalf("read back %+v, Marshal's %+v", a, b)
		}
	})
}

// TestStatusMarshal: Marshal writes encoding/json's bytes, on its own path
// or through json.Marshal.
func TestStatusMarshal(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 7, 20, 1, 2, 345678900, time.UTC)
	for _, st := range []*Status{
		{},
		{Seq: 12, Status: delivery.StatusRunning},
		{Seq: 12, Status: delivery.StatusHandled, Attempts: []delivery.Attempt{{Number: 1, Start: start, Duration: 1500 * time.Microsecond}}},
		{Seq: 3, Status: delivery.StatusDead, Attempts: []delivery.Attempt{
			{Number: 1, Start: start, Duration: time.Second, Err: "HTTP 500 from the target", Final: false},
			{Number: 2, Start: start.In(time.FixedZone("x", -7*3600)), Err: `a "quoted" <error> & more`, Final: true},
			{Number: 3, Start: time.Time{}, Err: "panic", Stack: "goroutine 1 [running]:\n\tmain.go:3"},
			{Number: 4, Start: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		}},
		{Seq: 1, Status: "ünknown"},
	} {
		want, _ := json.Marshal(st)
		if got := st.Marshal(); !bytes.Equal(got, want) {
			t.Errorf("Marshal:\n%s\nwant\n%s", got, want)
		}
	}
}

// FuzzStatusMarshal: Marshal is json.Marshal's bytes whatever the strings,
// times and numbers.
func FuzzStatusMarshal(f *testing.F) {
	f.Add(uint64(7), "handled", 1, int64(1765137662345678900), int64(1500000), "", "", false, 0)
	f.Add(uint64(0), "dead", -3, int64(-62135596800000000000/1000), int64(-1), "e\"rr<", "st\n", true, 3600)
	f.Fuzz(func(t *testing.T, seq uint64, status string, number int, startNanos, dur int64, err, stack string, final bool, offset int) {
		zone := time.FixedZone("z", offset%(26*3600))
		st := &Status{Seq: seq, Status: delivery.Status(status), Attempts: []delivery.Attempt{
			{Number: number, Start: time.Unix(0, startNanos).In(zone), Duration: time.Duration(dur), Err: err, Stack: stack, Final: final},
		}}
		want, _ := json.Marshal(st)
		if got := st.Marshal(); !bytes.Equal(got, want) {
			t.Fatalf("Marshal:\n%s\nwant\n%s", got, want)
		}
	})
}

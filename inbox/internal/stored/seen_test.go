package stored

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
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

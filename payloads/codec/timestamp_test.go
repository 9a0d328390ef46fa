package payloads

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestTimestampForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{`"2019-05-15T15:20:33Z"`, time.Date(2019, 5, 15, 15, 20, 33, 0, time.UTC)},
		{`"2019-05-15T15:20:33.123Z"`, time.Date(2019, 5, 15, 15, 20, 33, 123e6, time.UTC)},
		{`"2019-05-15T08:20:33-07:00"`, time.Date(2019, 5, 15, 15, 20, 33, 0, time.UTC)},
		{`"2019-05-15T17:20:33.5+02:00"`, time.Date(2019, 5, 15, 15, 20, 33, 5e8, time.UTC)},
		{`"2018-04-25 20:42:10"`, time.Date(2018, 4, 25, 20, 42, 10, 0, time.UTC)},
		{`"2018-04-25T20:42:10"`, time.Date(2018, 4, 25, 20, 42, 10, 0, time.UTC)},
		{`"2018-04-25 13:42:10 -0700"`, time.Date(2018, 4, 25, 20, 42, 10, 0, time.UTC)},
		{`"2018-04-25 20:42:10 UTC"`, time.Date(2018, 4, 25, 20, 42, 10, 0, time.UTC)},
		{`"2018-04-25"`, time.Date(2018, 4, 25, 0, 0, 0, 0, time.UTC)},
		{`"2018-04-25T20:42:10\u002e5Z"`, time.Date(2018, 4, 25, 20, 42, 10, 5e8, time.UTC)},
		{`1557933565`, time.Date(2019, 5, 15, 15, 19, 25, 0, time.UTC)},
		{`1557933565.25`, time.Date(2019, 5, 15, 15, 19, 25, 25e7, time.UTC)},
		{`-1`, time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)},
		{`0`, time.Unix(0, 0).UTC()},
		{`1.5e9`, time.Unix(15e8, 0).UTC()},
	} {
		var ts Timestamp
		if err := ts.UnmarshalJSON([]byte(tc.in)); err != nil {
			t.Errorf("UnmarshalJSON(%s): %v", tc.in, err)
			continue
		}
		if !ts.Time().Equal(tc.want) {
			t.Errorf("UnmarshalJSON(%s) = %v, want %v", tc.in, ts.Time(), tc.want)
		}
		out, err := ts.MarshalJSON()
		if err != nil || string(out) != tc.in {
			t.Errorf("MarshalJSON after %s = %s, %v; want the input back", tc.in, out, err)
		}
		// Inside a document, where the string fast path applies.
		in := `[` + tc.in + `,` + tc.in + `]` + strings.Repeat(" ", 8)
		var s []Timestamp
		if err := unmarshalFunc([]byte(in), "[]Timestamp", func(d *Decoder) error { return DecSlice(&s, d, DecTimestamp) }); err != nil {
			t.Errorf("decoding %s: %v", in, err)
			continue
		}
		for _, ts := range s {
			if out, _ := ts.MarshalJSON(); !ts.Time().Equal(tc.want) || string(out) != tc.in {
				t.Errorf("decoding %s: %v written %s, want %v written %s", in, ts.Time(), out, tc.want, tc.in)
			}
		}
	}
}

func TestTimestampRejects(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{`""`, ErrType},
		{`"yesterday"`, ErrType},
		{`"2019-13-45T00:00:00Z"`, ErrType},
		{`true`, ErrType},
		{`{}`, ErrType},
		{`null`, ErrType}, // a null timestamp is a nil *Timestamp, decided by the field
		{`1e300`, ErrType},
		{`99999999999999999999`, ErrType},
		{`"2019-05-15`, ErrSyntax},
		{`"2019-05-15T15:20:33Z" x`, ErrSyntax},
	} {
		var ts Timestamp
		err := ts.UnmarshalJSON([]byte(tc.in))
		if !errors.Is(err, tc.want) {
			t.Errorf("UnmarshalJSON(%s) = %v, want %v", tc.in, err, tc.want)
		}
		// Inside a document, where the string fast path applies: the same
		// error, at the value's offset.
		in := `[0,` + tc.in + `]` + strings.Repeat(" ", 8)
		var s []Timestamp
		err = unmarshalFunc([]byte(in), "[]Timestamp", func(d *Decoder) error { return DecSlice(&s, d, DecTimestamp) })
		var de *DecodeError
		if !errors.Is(err, tc.want) || !errors.As(err, &de) {
			t.Errorf("decoding %s: %v, want %v", in, err, tc.want)
		} else if tc.want == ErrType && de.Offset != 3 {
			t.Errorf("decoding %s: error at byte %d, want 3", in, de.Offset)
		}
	}
}

func TestTimestampBuiltInGo(t *testing.T) {
	for _, tc := range []struct {
		ts   Timestamp
		want string
	}{
		{Timestamp{}, `"0001-01-01T00:00:00Z"`},
		{NewTimestamp(time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)), `"2024-02-29T12:00:00Z"`},
		{NewTimestamp(time.Date(2024, 2, 29, 12, 0, 0, 1500, time.FixedZone("", -3600))), `"2024-02-29T12:00:00.0000015-01:00"`},
	} {
		out, err := tc.ts.MarshalJSON()
		if err != nil || string(out) != tc.want {
			t.Errorf("MarshalJSON(%v) = %s, %v; want %s", tc.ts, out, err, tc.want)
		}
	}
	a, b := NewTimestamp(time.Unix(1, 0)), Timestamp{}
	if err := b.UnmarshalJSON([]byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if a.Equal(b) {
		t.Error("Equal ignores how the time was written")
	}
	if !a.Time().Equal(b.Time()) {
		t.Error("the instants differ")
	}
}

// FuzzTimestamp: decoding never panics, and what decodes encodes back byte for
// byte and decodes again to an equal Timestamp.
func FuzzTimestamp(f *testing.F) {
	for _, s := range []string{`"2019-05-15T15:20:33Z"`, `"2018-04-25 20:42:10"`, `1557933565`, `-1.5`, `"2019-05-15T17:20:33.5+02:00"`, `""`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ts Timestamp
		if ts.UnmarshalJSON(b) != nil {
			return
		}
		out, err := ts.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		if !bytes.Equal(out, bytes.TrimSpace(b)) {
			t.Fatalf("MarshalJSON after %q = %q", b, out)
		}
		var again Timestamp
		if err := again.UnmarshalJSON(out); err != nil || !again.Equal(ts) {
			t.Fatalf("re-decoding %q: %v, %v", out, again, err)
		}
		// A Timestamp built in Go from the same instant reads back as that instant.
		built, _ := NewTimestamp(ts.Time()).MarshalJSON()
		var back Timestamp
		if err := back.UnmarshalJSON(built); err != nil || !back.Time().Equal(ts.Time()) {
			t.Fatalf("%s from %q reads back as %v, %v", built, b, back, err)
		}
	})
}

func ExampleTimestamp() {
	var ts Timestamp
	_ = ts.UnmarshalJSON([]byte(`"2018-04-25 20:42:10"`))
	out, _ := ts.MarshalJSON()
	fmt.Println(ts.Time().Format(time.RFC3339), string(out))

	_ = ts.UnmarshalJSON([]byte(`1557933565`))
	out, _ = ts.MarshalJSON()
	fmt.Println(ts, string(out))
	// Output:
	// 2018-04-25T20:42:10Z "2018-04-25 20:42:10"
	// 2019-05-15T15:19:25Z 1557933565
}

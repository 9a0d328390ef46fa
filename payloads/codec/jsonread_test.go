package payloads

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// decodeValid reports whether the Decoder accepts b as one JSON document.
func decodeValid(b []byte) bool {
	d := Decoder{buf: b}
	return d.skip() == nil && d.end() == nil
}

func TestDecoderAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `true`, `false`, `null`, ` {"a" : [1, {"b": null}] } `,
		`"\u00e9\ud83d\ude00\n\"\\\/"`, "\"\xff\"", `{"a":1,"a":2}`, `-1E+10`,
		``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
		`tru`, `nul`, `nullx`, `"abc`, "\"a\tb\"", `"\x"`, `"\u12"`, `{} {}`, `{"a":1}x`, `'a'`, `[`, `]`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	} {
		if got, want := decodeValid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("valid(%.40q) = %v, encoding/json says %v", in, got, want)
		}
	}
}

func TestDecodeStringAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"\u00e9"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`,
		`"\ude00\ud83d"`, "\"caf\xc3\xa9\"", "\"\xff\xfe\"", "\"\xed\xa0\x80\"", `"\b\f\n\r\t\/"`,
		`"<&>"`, "\"\u2028\"",
	} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("encoding/json rejects %q: %v", in, err)
		}
		var got string
		d := Decoder{buf: []byte(in)}
		if err := DecString(&got, &d); err != nil {
			t.Fatalf("DecString(%q): %v", in, err)
		}
		if got != want {
			t.Errorf("DecString(%q) = %q, encoding/json gives %q", in, got, want)
		}
	}
}

func TestDecodeInt64(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr error
	}{
		{"0", 0, nil},
		{"-0", 0, nil},
		{"9223372036854775807", math.MaxInt64, nil},
		{"-9223372036854775808", math.MinInt64, nil},
		{"9223372036854775808", 0, ErrType},
		{"-9223372036854775809", 0, ErrType},
		{"1.0", 0, ErrType},
		{"1e3", 0, ErrType},
		{`"1"`, 0, ErrType},
		{"null", 0, ErrType},
		{"01", 0, ErrSyntax}, // the 1 is left over
		{"-", 0, ErrSyntax},
	} {
		var got int64
		err := unmarshalFunc([]byte(tc.in), "int64", func(d *Decoder) error { return DecInt64(&got, d) })
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("DecInt64(%s): error %v, want %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("DecInt64(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestScalarsInDocumentsAgreeWithEncodingJSON decodes integers and booleans
// inside arrays and objects, where the decoders' fast paths apply (they need a
// byte after the value), and compares values and acceptance with encoding/json.
func TestScalarsInDocumentsAgreeWithEncodingJSON(t *testing.T) {
	ints := []string{"0", "7", "10", "-3", "123456789012345678", "999999999999999999",
		"1234567890123456789", "9223372036854775807", "9223372036854775808", "12345678901234567890",
		"1.5", "1.0", "1e3", "12E1", "01", "1x", "1-", "1 ", " 1"}
	for _, n := range ints {
		for _, in := range []string{`[` + n + `]`, `[` + n + `,2]`, `{"a":` + n + `}`} {
			var want []int64
			var wantObj map[string]int64
			var wantErr error
			if in[0] == '[' {
				wantErr = json.Unmarshal([]byte(in), &want)
			} else {
				wantErr = json.Unmarshal([]byte(in), &wantObj)
				want = []int64{wantObj["a"]}
			}
			var got []int64
			var err error
			if in[0] == '[' {
				err = unmarshalFunc([]byte(in), "[]int64", func(d *Decoder) error { return DecSlice(&got, d, DecInt64) })
			} else {
				var m map[string]int64
				err = unmarshalFunc([]byte(in), "map", func(d *Decoder) error { return DecMap(&m, d, DecInt64) })
				got = []int64{m["a"]}
			}
			if (err != nil) != (wantErr != nil) {
				t.Errorf("%s: error %v, encoding/json %v", in, err, wantErr)
			} else if err == nil && !slices.Equal(got, want) {
				t.Errorf("%s = %v, encoding/json %v", in, got, want)
			}
		}
	}
	for _, b := range []string{"true", "false", "tru", "fals", "truex", "falsey", "true ", " false"} {
		in := `[` + b + `,true]`
		var want []bool
		wantErr := json.Unmarshal([]byte(in), &want)
		var got []bool
		err := unmarshalFunc([]byte(in), "[]bool", func(d *Decoder) error { return DecSlice(&got, d, DecBool) })
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, encoding/json %v", in, err, wantErr)
		} else if err == nil && !slices.Equal(got, want) {
			t.Errorf("%s = %v, encoding/json %v", in, got, want)
		}
	}
}

func TestDecodeErrorHasPathAndOffset(t *testing.T) {
	in := `{"a":[{"b":1},{"b":"x"}]}`
	err := unmarshalFunc([]byte(in), "T", func(d *Decoder) error {
		return d.object(func([]byte) error {
			var s []map[string]int64
			return DecSlice(&s, d, MapOf(DecInt64))
		})
	})
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is not a *DecodeError", err)
	}
	if de.Type != "T" || de.Path != ".a[1].b" || de.Offset != strings.Index(in, `"x"`) || !errors.Is(err, ErrType) {
		t.Errorf("got %+v (%v), want type T, path .a[1].b, offset %d, ErrType", de, err, strings.Index(in, `"x"`))
	}
	want := `payloads: decoding T at .a[1].b (byte 19): want number, got string`
	if err.Error() != want {
		t.Errorf("message\n %s\nwant\n %s", err, want)
	}
}

func TestEncoderAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "<a href=\"x\">&amp;</a>", "tab\there\nnl", "\x00\x1f\x7f", "é😀", "\xff", "\u2028\u2029", `back\slash`} {
		var e Encoder
		e.str(s)
		want, _ := json.Marshal(s)
		if !bytes.Equal(e.buf, want) {
			t.Errorf("str(%q) = %s, encoding/json gives %s", s, e.buf, want)
		}
	}
	for _, f := range []float64{0, 1, -1.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, -0.0} {
		var e Encoder
		EncFloat64(&f, &e)
		want, _ := json.Marshal(f)
		if !bytes.Equal(e.buf, want) {
			t.Errorf("EncFloat64(%v) = %s, encoding/json gives %s", f, e.buf, want)
		}
	}
	nan := math.NaN()
	var e Encoder
	EncFloat64(&nan, &e)
	if !errors.Is(e.err, ErrEncode) {
		t.Errorf("EncFloat64(NaN): error %v, want ErrEncode", e.err)
	}
}

func TestEncodeRawChecksValidity(t *testing.T) {
	for _, tc := range []struct {
		raw     json.RawMessage
		want    string
		wantErr bool
	}{
		{nil, "null", false},
		{json.RawMessage(`{"a": 1}`), `{"a": 1}`, false},
		{json.RawMessage(`{"a":`), "null", true},
		{json.RawMessage(`1 2`), "null", true},
	} {
		var e Encoder
		EncRaw(&tc.raw, &e)
		if string(e.buf) != tc.want || (e.err != nil) != tc.wantErr {
			t.Errorf("EncRaw(%q) = %s, %v", tc.raw, e.buf, e.err)
		}
	}
}

// FuzzDecoder checks the reader against encoding/json on any input: the same
// documents are valid, strings and integers read the same, and what the writer
// writes for a string reads back as that string.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud83d\ude00"`, `-12`, `1.5e3`, "\"\xff\"", `{"a":}`, `[`, `9223372036854775808`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := json.Valid(b)
		if got := decodeValid(b); got != valid {
			t.Fatalf("valid(%q) = %v, encoding/json says %v", b, got, valid)
		}
		if !valid {
			return
		}
		var want any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		switch w := want.(type) {
		case string:
			var got string
			if err := unmarshalFunc(b, "string", func(d *Decoder) error { return DecString(&got, d) }); err != nil || got != w {
				t.Fatalf("DecString(%q) = %q, %v; want %q", b, got, err, w)
			}
			var e Encoder
			e.str(got)
			var back string
			if err := json.Unmarshal(e.buf, &back); err != nil || back != got {
				t.Fatalf("str(%q) = %s reads back as %q, %v", got, e.buf, back, err)
			}
		case json.Number:
			var wantInt int64
			errWant := json.Unmarshal(b, &wantInt)
			var got int64
			err := unmarshalFunc(b, "int64", func(d *Decoder) error { return DecInt64(&got, d) })
			if (err == nil) != (errWant == nil) || err == nil && got != wantInt {
				t.Fatalf("DecInt64(%s) = %d, %v; encoding/json gives %d, %v", b, got, err, wantInt, errWant)
			}
		}
	})
}

// unmarshalFunc decodes the whole document b with fn, as a generated
// UnmarshalJSON does with its type's decoder.
func unmarshalFunc(b []byte, typ string, fn func(*Decoder) error) error {
	d := NewDecoder(b)
	return d.Finish(fn(&d), typ)
}

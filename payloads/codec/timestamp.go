package payloads

import (
	"math"
	"strconv"
	"strings"
	"time"

	"forgehooks.dev/forgehooks/internal/jsonscan"
)

// Timestamp is a point in time as a payload carries it. The forge writes times in
// several ways: RFC 3339 ("2019-05-15T15:20:33Z", with an offset, with fractional
// seconds), a few older forms ("2018-04-25 20:42:10", taken as UTC), and in some
// payloads (push: repository.created_at) Unix seconds as a JSON number. Timestamp
// reads them all and remembers the exact text it was decoded from, so that
// encoding gives that text back; a Timestamp built in Go encodes as RFC 3339.
//
// A Timestamp is immutable: build another with NewTimestamp to change it.
type Timestamp struct {
	t time.Time
	// raw is the JSON text the value was decoded from (with quotes when it was a
	// string), or "" when it was built in Go.
	raw string
}

// NewTimestamp returns a Timestamp of t that encodes as RFC 3339 with the
// fractional seconds t has.
func NewTimestamp(t time.Time) Timestamp { return Timestamp{t: t} }

// Time returns the instant. A time written without a zone is taken as UTC; one
// with an offset keeps it.
func (ts Timestamp) Time() time.Time { return ts.t }

// IsZero reports whether ts holds the zero time.Time.
func (ts Timestamp) IsZero() bool { return ts.t.IsZero() }

// String returns the instant in RFC 3339 with fractional seconds if any.
func (ts Timestamp) String() string { return ts.t.Format(time.RFC3339Nano) }

// Equal reports whether ts and u hold the same instant written the same way (the
// same decoded text, or both built in Go). go-cmp uses it to compare Timestamps.
func (ts Timestamp) Equal(u Timestamp) bool { return ts.t.Equal(u.t) && ts.raw == u.raw }

// MarshalJSON returns the text ts was decoded from, byte for byte, or RFC 3339 for
// a Timestamp built in Go.
func (ts Timestamp) MarshalJSON() ([]byte, error) {
	var e Encoder
	EncTimestamp(&ts, &e)
	return e.buf, e.err
}

// UnmarshalJSON reads a timestamp from a JSON string or number (Unix seconds).
func (ts *Timestamp) UnmarshalJSON(b []byte) error {
	d := NewDecoder(b)
	return d.Finish(DecTimestamp(ts, &d), "Timestamp")
}

// EncTimestamp writes *ts, the text it was decoded from when it has one.
func EncTimestamp(ts *Timestamp, e *Encoder) {
	if ts.raw != "" {
		e.buf = append(e.buf, ts.raw...)
		return
	}
	e.buf = append(e.buf, '"')
	e.buf = ts.t.AppendFormat(e.buf, time.RFC3339Nano)
	e.buf = append(e.buf, '"')
}

// DecTimestamp reads a timestamp, a string or a number (Unix seconds), into *ts.
func DecTimestamp(ts *Timestamp, d *Decoder) error {
	switch c := d.peek(); {
	case c == '"':
		start := d.pos
		// Plain ASCII without escapes, the forge's form: the text and the raw
		// form are substrings of the shared copy, found eight bytes per step.
		if d.shared() {
			if j := stopAt(d.buf, start+1); j >= 0 && d.buf[j] == '"' {
				t, ok := parseTime(d.src[start+1 : j])
				if !ok {
					return d.typef("want a timestamp, got string %q", d.buf[start+1:j])
				}
				d.pos = j + 1
				*ts = Timestamp{t: t, raw: d.src[start : j+1]}
				return nil
			}
		}
		b, plain, err := d.strBytes()
		if err != nil {
			return err
		}
		// The text and the raw form are substrings of the shared copy of the
		// document when there is one, so a timestamp costs no allocation.
		var text, raw string
		if plain && d.shared() {
			text, raw = d.src[start+1:d.pos-1], d.src[start:d.pos]
		} else {
			text, raw = string(b), string(d.buf[start:d.pos])
		}
		t, ok := parseTime(text)
		if !ok {
			d.pos = start
			return d.typef("want a timestamp, got string %q", b)
		}
		*ts = Timestamp{t: t, raw: raw}
		return nil
	case c == '-' || '0' <= c && c <= '9':
		start := d.pos
		b, err := d.number()
		if err != nil {
			return err
		}
		var text string
		if d.shared() {
			text = d.src[start:d.pos]
		} else {
			text = string(b)
		}
		t, ok := parseUnix(text)
		if !ok {
			d.pos = start
			return d.typef("want Unix seconds, got number %s out of range", b)
		}
		*ts = Timestamp{t: t, raw: text}
		return nil
	}
	return d.wrongKind("timestamp (string or number)")
}

// timeLayouts are the string forms of a time the forge has been seen to send,
// most common first. RFC 3339 also covers fractional seconds and offsets; time.Parse
// accepts fractional seconds after the seconds of the other layouts too.
var timeLayouts = []string{
	time.RFC3339,
	"2006-01-02T15:04:05",         // no zone: UTC
	"2006-01-02 15:04:05",         // no zone: UTC
	"2006-01-02 15:04:05 -0700",   // the forge's git-style form
	"2006-01-02 15:04:05 -07:00",  //
	"2006-01-02T15:04:05-0700",    // offset without a colon
	"2006-01-02 15:04:05 MST",     // a zone abbreviation, e.g. UTC
	"2006-01-02T15:04:05.000 MST", //
	"2006-01-02",                  // a date alone: midnight UTC
}

func parseTime(s string) (time.Time, bool) {
	// Every layout starts with a date; anything shorter or not starting with a
	// digit cannot match, and is rejected before trying them all.
	if len(s) < len("2006-01-02") || s[0] < '0' || s[0] > '9' {
		return time.Time{}, false
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseUnix reads Unix seconds, possibly with a fraction or an exponent.
func parseUnix(s string) (time.Time, bool) {
	if v, ok := jsonscan.ParseInt64([]byte(s)); ok {
		if v < minUnix || v > maxUnix {
			return time.Time{}, false
		}
		return time.Unix(v, 0).UTC(), true
	}
	// A fraction: split so that the seconds keep full precision.
	if i := strings.IndexByte(s, '.'); i >= 0 && !strings.ContainsAny(s, "eE") {
		sec, ok := jsonscan.ParseInt64([]byte(s[:i]))
		if !ok && s[:i] != "-0" {
			return time.Time{}, false
		}
		frac := s[i+1:]
		if len(frac) > 9 {
			frac = frac[:9]
		}
		ns, err := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if err != nil || sec < minUnix || sec > maxUnix {
			return time.Time{}, false
		}
		if strings.HasPrefix(s, "-") {
			ns = -ns
		}
		return time.Unix(sec, ns).UTC(), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < minUnix || f > maxUnix {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
}

// The range of Unix seconds accepted: years 0001 to 9999, which time.Time formats
// as RFC 3339 without surprises.
const (
	minUnix = -62135596800
	maxUnix = 253402300799
)

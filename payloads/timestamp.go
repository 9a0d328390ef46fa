package payloads

import (
	"time"

	codec "forgehooks.dev/forgehooks/payloads/codec"
)

// Timestamp is a point in time as a payload carries it. The forge writes times in
// several ways: RFC 3339 ("2019-05-15T15:20:33Z", with an offset, with fractional
// seconds), a few older forms ("2018-04-25 20:42:10", taken as UTC), and in some
// payloads (push: repository.created_at) Unix seconds as a JSON number. Timestamp
// reads them all and remembers the exact text it was decoded from, so that
// encoding gives that text back; a Timestamp built in Go encodes as RFC 3339.
// Time returns the instant, String formats it, Equal compares instant and text.
//
// A Timestamp is immutable: build another with NewTimestamp to change it.
type Timestamp = codec.Timestamp

// NewTimestamp returns a Timestamp of t that encodes as RFC 3339 with the
// fractional seconds t has.
func NewTimestamp(t time.Time) Timestamp { return codec.NewTimestamp(t) }

// The JSON of the records written per delivery, without encoding/json's
// reflection on the common path.

package stored

import (
	"encoding/json"
	"strconv"
	"time"
)

// SeenRecord is the dedupe record of a delivery stored at seq under id
// with the body digest digest, as the inbox reads it back with
// encoding/json: {"d":digest,"s":seq,"id":id}, a member left out when
// empty (zero). It is written once per delivery at ingest, where
// json.Marshal's reflection cost a few microseconds; a string that JSON
// would escape goes through encoding/json, so the bytes are always
// Marshal's.
func SeenRecord(digest string, seq uint64, id string) []byte {
	b := make([]byte, 0, 24+len(digest)+len(id)+20)
	b = append(b, '{')
	if digest != "" {
		b = appendJSONString(append(b, `"d":`...), digest)
	}
	if seq != 0 {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(append(b, `"s":`...), seq, 10)
	}
	if id != "" {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(append(b, `"id":`...), id)
	}
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes it: as it is between
// quotes when it needs no escape (delivery ids and hex digests), else
// through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	if out, ok := appendPlainString(b, s); ok {
		return out
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// appendStatus appends st as json.Marshal writes it; false when a string
// needs escaping or a time is outside the years 0-9999 (Marshal's
// business).
func appendStatus(b []byte, st *Status) ([]byte, bool) {
	b = strconv.AppendUint(append(b, `{"seq":`...), st.Seq, 10)
	var ok bool
	if b, ok = appendPlainString(append(b, `,"status":`...), string(st.Status)); !ok {
		return nil, false
	}
	if len(st.Attempts) > 0 {
		b = append(b, `,"attempts":[`...)
		for i, a := range st.Attempts {
			if i > 0 {
				b = append(b, ',')
			}
			if y := a.Start.Year(); y < 0 || y > 9999 {
				return nil, false
			}
			b = strconv.AppendInt(append(b, `{"Number":`...), int64(a.Number), 10)
			b = a.Start.AppendFormat(append(b, `,"Start":"`...), time.RFC3339Nano)
			b = strconv.AppendInt(append(b, `","Duration":`...), int64(a.Duration), 10)
			if b, ok = appendPlainString(append(b, `,"Err":`...), a.Err); !ok {
				return nil, false
			}
			if a.Stack != "" {
				if b, ok = appendPlainString(append(b, `,"Stack":`...), a.Stack); !ok {
					return nil, false
				}
			}
			if a.Final {
				b = append(b, `,"Final":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// appendPlainString appends s quoted when JSON writes it as it is: printable
// ASCII but for '"', '\\' and what encoding/json escapes for HTML ('<', '>',
// '&'); false otherwise.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return nil, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

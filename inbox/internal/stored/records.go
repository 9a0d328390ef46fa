package stored

import (
	"encoding/json"
	"strconv"
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
// quotes when it holds only printable ASCII that needs no escape
// (delivery ids and hex digests), else through json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

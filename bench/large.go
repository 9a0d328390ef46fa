package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// LargePush returns a push payload of nearly size bytes (never more): the push
// given, with its commits repeated. It is how a 25 MiB delivery, the forge's
// limit, looks: a push of many commits.
func LargePush(push []byte, size int) ([]byte, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(push, &p); err != nil {
		return nil, err
	}
	var commits []json.RawMessage
	if err := json.Unmarshal(p["commits"], &commits); err != nil || len(commits) == 0 {
		return nil, fmt.Errorf("the push has no commits to repeat (%v)", err)
	}
	p["commits"] = json.RawMessage("[]")
	head, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	// head ends in ...,"commits":[],...}: splice the commits into the array.
	i := bytes.Index(head, []byte(`"commits":[]`))
	if i < 0 {
		return nil, fmt.Errorf("no commits member in the re-encoded push")
	}
	i += len(`"commits":[`)
	var b bytes.Buffer
	b.Grow(size)
	b.Write(head[:i])
	for k := 0; ; k++ {
		c := commits[k%len(commits)]
		if b.Len()+1+len(c)+len(head)-i > size {
			break
		}
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(c)
	}
	b.Write(head[i:])
	return b.Bytes(), nil
}

package bench

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Secret signs every delivery of the benchmarks.
const Secret = "It's a Secret to Everybody"

// Delivery is one corpus payload, signed as the forge signs it.
type Delivery struct {
	// Event is the event name: the name of the payload's directory.
	Event string
	// Action is the payload's top-level "action" when it is a string.
	Action string
	// Path is the file the payload came from, relative to the corpus directory.
	Path string
	// Body is the payload, byte for byte as committed.
	Body []byte
	// Signature is "sha256=" and the hex HMAC-SHA256 of Body under Secret.
	Signature string
}

// Name is "event.action", or "event" without an action.
func (d Delivery) Name() string {
	if d.Action == "" {
		return d.Event
	}
	return d.Event + "." + d.Action
}

// CorpusDir is where the forge's public example payloads are, relative to this
// module: bench/ cannot import the SDK's internal corpus package, so it reads the
// same files at run time.
const CorpusDir = "../internal/corpus/testdata/examples"

// LoadCorpus reads every dir/<event>/*.json, sorted by path, and signs it.
func LoadCorpus(dir string) ([]Delivery, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no payloads under %s", dir)
	}
	sort.Strings(paths)
	out := make([]Delivery, 0, len(paths))
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var head struct {
			Action any `json:"action"`
		}
		if err := json.Unmarshal(body, &head); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		action, _ := head.Action.(string)
		rel, _ := filepath.Rel(dir, p)
		out = append(out, Delivery{
			Event:     filepath.Base(filepath.Dir(p)),
			Action:    action,
			Path:      filepath.ToSlash(rel),
			Body:      body,
			Signature: Sign(body),
		})
	}
	return out, nil
}

// Sign returns body's signature under Secret, computed with crypto/hmac alone.
func Sign(body []byte) string {
	mac := hmac.New(sha256.New, []byte(Secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// MedianPush returns the push delivery of median size: the load tool's payload.
func MedianPush(all []Delivery) (Delivery, error) {
	var push []Delivery
	for _, d := range all {
		if d.Event == "push" {
			push = append(push, d)
		}
	}
	if len(push) == 0 {
		return Delivery{}, fmt.Errorf("no push payload in the corpus")
	}
	sort.SliceStable(push, func(i, j int) bool { return len(push[i].Body) < len(push[j].Body) })
	return push[(len(push)-1)/2], nil
}

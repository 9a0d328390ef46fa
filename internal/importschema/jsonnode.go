package importschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jkind is the JSON kind of a jnode.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

// jnode is a JSON value that keeps the order of object members: the spec lists
// properties in an order worth keeping, which encoding/json's maps would lose.
type jnode struct {
	kind  jkind
	str   string // jString, and jNumber's literal text
	bool  bool
	elems []*jnode // jArray
	keys  []string // jObject, in document order
	vals  []*jnode // jObject, parallel to keys
}

// get returns the member named key of an object, or nil.
func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != jObject {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// path follows a chain of member names; nil when one is missing.
func (n *jnode) path(keys ...string) *jnode {
	for _, k := range keys {
		n = n.get(k)
	}
	return n
}

// text returns a string member's value, or "".
func (n *jnode) text(key string) string {
	if v := n.get(key); v != nil && v.kind == jString {
		return v.str
	}
	return ""
}

// strings returns the string elements of an array member.
func (n *jnode) strings(key string) []string {
	var out []string
	if v := n.get(key); v != nil && v.kind == jArray {
		for _, e := range v.elems {
			if e.kind == jString {
				out = append(out, e.str)
			}
		}
	}
	return out
}

// has reports whether an object has the member.
func (n *jnode) has(key string) bool { return n.get(key) != nil }

// errJSON marks a spec that is not the JSON the importer expects.
var errJSON = errors.New("bad JSON")

// parseJSON decodes one JSON document into a jnode tree.
func parseJSON(data []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := decodeNode(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errJSON, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the document", errJSON)
	}
	return n, nil
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

func decodeNode(dec *json.Decoder, depth int) (*jnode, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &jnode{kind: jNull}, nil
	case bool:
		return &jnode{kind: jBool, bool: t}, nil
	case json.Number:
		return &jnode{kind: jNumber, str: string(t)}, nil
	case string:
		return &jnode{kind: jString, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &jnode{kind: jArray}
			for dec.More() {
				e, err := decodeNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, e)
			}
			_, err := dec.Token() // ']'
			return n, err
		case '{':
			n := &jnode{kind: jObject}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeNode(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			_, err := dec.Token() // '}'
			return n, err
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// scalarText renders a scalar (an enum value) as the schema writes it.
func (n *jnode) scalarText() (string, bool) {
	switch n.kind {
	case jString, jNumber:
		return n.str, true
	case jBool:
		if n.bool {
			return "true", true
		}
		return "false", true
	}
	return "", false
}

package jsonscan

import (
	"fmt"
	"unicode/utf8"
)

// Path names a string two members deep in a JSON object: member Path[1] of the
// object that is the top-level member Path[0], as {"repository", "full_name"}
// names repository.full_name. Both names are compared with decoded keys.
type Path [2]string

// MaxPaths is the most paths one Lookup takes.
const MaxPaths = 64

// Lookup checks that data is exactly one JSON object, as Scan does, and locates
// the string or number at each of paths in the same single pass, into res[i]
// for paths[i] (Found for a string, Int64 for an integer). The strings are what
// decoding data into a map[string]json.RawMessage, the top-level member into
// another, and its member into a string would give:
// keys match exactly once decoded, the last duplicate key wins at either level
// (a later top-level member replaces an earlier one whole, as JSON.parse does),
// escapes are decoded and invalid UTF-8 becomes U+FFFD. A path whose top-level
// member is not an object, or whose member is absent or neither a string nor a
// number, finds nothing.
//
// On error every res[i] is the zero Result. Lookup does not allocate, except
// for the error; res must have room for every path (it panics otherwise, and
// when there are more than MaxPaths paths).
func Lookup(data []byte, paths []Path, res []Result) error {
	return LookupTop(data, paths, 0, res)
}

// LookupTop is Lookup where each path whose bit (1<<i for paths[i]) is set in
// top names a top-level member itself, its Path[1] unused: the member Scan
// finds as the action, with Scan's result. It lets one pass find the action
// and deeper values together.
func LookupTop(data []byte, paths []Path, top uint64, res []Result) error {
	if len(paths) > MaxPaths {
		panic(fmt.Sprintf("jsonscan.Lookup: %d paths, more than MaxPaths (%d)", len(paths), MaxPaths))
	}
	res = res[:len(paths)]
	clear(res)
	if err := walk(data, paths, top, res); err != nil {
		clear(res)
		return err
	}
	return nil
}

// walk is the one pass of Scan and Lookup over one JSON object: it checks
// data as json.Valid does, and locates the value of each path into res. A
// path whose bit is set in top names a top-level member itself (Path[1]
// unused): Scan's "action". A path's result is reset when its key comes
// again, so that the last duplicate wins, and set when the value is a string
// or a number.
func walk(data []byte, paths []Path, top uint64, res []Result) error {
	var (
		stack  bitStack
		n      = len(data)
		inside uint64 // two-level paths whose top-level member is the one being scanned
		next   uint64 // paths whose value is the value about to be scanned
		err    error
	)
	i := SkipSpace(data, 0)
	if i == n {
		return &SyntaxError{i, "unexpected end of JSON input"}
	}
	first := data[i]
	for {
		// i is at the first byte of a value.
		if i >= n {
			return &SyntaxError{i, "unexpected end of JSON input"}
		}
		want := next
		next = 0
		switch c := data[i]; {
		case c == '{':
			if !stack.push(false) {
				return &SyntaxError{i, "exceeded max depth"}
			}
			i = SkipSpace(data, i+1)
			if i < n && data[i] == '}' {
				stack.pop()
				i++
				break
			}
			if i, next, err = pathMember(data, i, stack.depth, paths, top, res, &inside); err != nil {
				return err
			}
			continue
		case c == '[':
			if !stack.push(true) {
				return &SyntaxError{i, "exceeded max depth"}
			}
			i = SkipSpace(data, i+1)
			if i < n && data[i] == ']' {
				stack.pop()
				i++
				break
			}
			continue
		case c == '"':
			start := i + 1
			if i, err = String(data, start); err != nil {
				return err
			}
			if want != 0 {
				v := data[start : i-1]
				found(res, want, Result{start: start, end: i - 1, found: true, decode: needsDecode(v)})
			}
		case c == '-' || c >= '0' && c <= '9':
			start := i
			if i, err = Number(data, i); err != nil {
				return err
			}
			if want != 0 {
				found(res, want, Result{start: start, end: i, number: true})
			}
		case c == 't':
			i, err = Literal(data, i, "true")
		case c == 'f':
			i, err = Literal(data, i, "false")
		case c == 'n':
			i, err = Literal(data, i, "null")
		default:
			return &SyntaxError{i, fmt.Sprintf("invalid character %s looking for beginning of value", QuoteChar(c))}
		}
		if err != nil {
			return err
		}
		// After a value: close containers until a ',' starts the next value.
	after:
		for {
			i = SkipSpace(data, i)
			if stack.depth == 0 {
				if i != n {
					return &SyntaxError{i, fmt.Sprintf("invalid character %s after top-level value", QuoteChar(data[i]))}
				}
				if first != '{' {
					return &NotObjectError{Kind: kind(first)}
				}
				return nil
			}
			if i >= n {
				return &SyntaxError{i, "unexpected end of JSON input"}
			}
			inArray := stack.top()
			switch c := data[i]; {
			case c == ',':
				i = SkipSpace(data, i+1)
				if !inArray {
					if i, next, err = pathMember(data, i, stack.depth, paths, top, res, &inside); err != nil {
						return err
					}
				}
				break after
			case c == '}' && !inArray, c == ']' && inArray:
				stack.pop()
				i++
			default:
				where := "object key-value pair"
				if inArray {
					where = "array element"
				}
				return &SyntaxError{i, fmt.Sprintf("invalid character %s after %s", QuoteChar(c), where)}
			}
		}
	}
}

// found sets the result of each path in want to r.
func found(res []Result, want uint64, r Result) {
	for k := range res {
		if want&(1<<k) != 0 {
			res[k] = r
		}
	}
}

// pathMember scans an object key, the white space around it and the colon, and
// returns the offset of the member's value. depth is the object's depth (1 for
// the top level). A top-level key gives the one-level paths (top) it names,
// whose value the member's value is, and sets inside to the two-level paths
// it starts; a key of the object that is their value gives the paths it
// ends. Either way those paths' results are reset: a later duplicate key
// replaces what an earlier one found.
func pathMember(data []byte, i, depth int, paths []Path, top uint64, res []Result, inside *uint64) (next int, want uint64, err error) {
	if i >= len(data) {
		return i, 0, &SyntaxError{i, "unexpected end of JSON input"}
	}
	if data[i] != '"' {
		return i, 0, &SyntaxError{i, fmt.Sprintf("invalid character %s looking for beginning of object key string", QuoteChar(data[i]))}
	}
	start := i + 1
	if i, err = String(data, start); err != nil {
		return i, 0, err
	}
	switch key := data[start : i-1]; {
	case depth == 1:
		*inside = 0
		for k, p := range paths {
			if keyIs(key, p[0]) {
				if top&(1<<k) != 0 {
					want |= 1 << k
				} else {
					*inside |= 1 << k
				}
				res[k] = Result{}
			}
		}
	case depth == 2 && *inside != 0:
		for k, p := range paths {
			if *inside&(1<<k) != 0 && keyIs(key, p[1]) {
				want |= 1 << k
				res[k] = Result{}
			}
		}
	}
	i = SkipSpace(data, i)
	if i >= len(data) {
		return i, 0, &SyntaxError{i, "unexpected end of JSON input"}
	}
	if data[i] != ':' {
		return i, 0, &SyntaxError{i, fmt.Sprintf("invalid character %s after object key", QuoteChar(data[i]))}
	}
	return SkipSpace(data, i+1), want, nil
}

// kind names the JSON type that starts with first.
func kind(first byte) string {
	switch first {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// bitStack records, per open container, whether it is an array, in a fixed
// array so that scanning never allocates.
type bitStack struct {
	depth int
	bits  [(MaxDepth + 63) / 64]uint64
}

func (s *bitStack) push(array bool) bool {
	if s.depth == MaxDepth {
		return false
	}
	w, b := s.depth/64, uint(s.depth%64)
	if array {
		s.bits[w] |= 1 << b
	} else {
		s.bits[w] &^= 1 << b
	}
	s.depth++
	return true
}

func (s *bitStack) pop() { s.depth-- }

func (s *bitStack) top() (array bool) {
	d := s.depth - 1
	return s.bits[d/64]>>(uint(d%64))&1 == 1
}

// keyIs reports whether a key's raw content (valid JSON string content)
// decodes to want, as encoding/json decodes keys.
func keyIs(raw []byte, want string) bool {
	if string(raw) == want {
		// The same bytes decode to want unless an escape or invalid UTF-8
		// changes them in decoding.
		return !needsDecode(raw)
	}
	// A first byte that is plain ASCII decodes to itself: most keys differ
	// from want right there.
	if len(raw) > 0 && len(want) > 0 && raw[0] != want[0] && raw[0] != '\\' && raw[0] < utf8.RuneSelf {
		return false
	}
	// Decoding may still give want; compare character by character, which
	// stops at the first difference.
	j := 0
	for i := 0; i < len(raw); {
		var r rune
		r, i = nextRune(raw, i)
		w, size := utf8.DecodeRuneInString(want[j:])
		if size == 0 || w != r || w == utf8.RuneError && size == 1 {
			// want is shorter, differs, or holds invalid UTF-8, which no
			// decoded key does.
			return false
		}
		j += size
	}
	return j == len(want)
}

package importschema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// LockFile is the record of every exported type name the generator was once given,
// beside events.yaml and types.yaml. The importer extends it and never rewrites an
// entry, so that names and field shapes survive upstream changes.
const LockFile = "lock.yaml"

// lock is schema/lock.yaml: for every type name once emitted, the identity that
// finds its type again in a later spec (the site: where it is used), and which of
// its members were generated as pointers and which as values.
type lock struct {
	Types []*lockType `yaml:"types"`

	byName map[string]*lockType
	bySite map[string]*lockType
}

// lockType is one locked name.
type lockType struct {
	Name string        `yaml:"name"`
	Kind genmodel.Kind `yaml:"kind"`
	// Site says where the type is used: "event.action" for a payload,
	// "Parent.member" (with "[]" for an element of an array or map) or
	// "Union|variant" for a type named after its first use, "overrides" for a type
	// that overrides.yaml adds. A later import gives the type at this site the name.
	Site string `yaml:"site"`
	// Since is the spec version that first had the type.
	Since string `yaml:"since,omitempty"`
	// Pointers and Values list the struct's members (JSON keys) generated as a Go
	// pointer or as a value. Arrays, maps and raw members are neither. A pointer
	// stays a pointer; a value that becomes a pointer breaks compiled code.
	Pointers []string `yaml:"pointers,omitempty"`
	Values   []string `yaml:"values,omitempty"`
}

const lockHeader = "# The names and shapes the generator has emitted, so that a schema update keeps\n" +
	"# them (see schema/README.md). cmd/importschema extends this file and never\n" +
	"# rewrites an entry; do not edit by hand.\n"

// readLock reads a lock file; a missing file is an empty lock.
func readLock(path string) (*lock, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newLock(nil), nil
	}
	if err != nil {
		return nil, err
	}
	return parseLock(path, data)
}

func parseLock(path string, data []byte) (*lock, error) {
	var l lock
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(path, data, err)
	}
	for _, t := range l.Types {
		if t == nil || t.Name == "" || t.Site == "" || t.Kind == "" {
			return nil, fmt.Errorf("%s: every entry needs name, kind and site", path)
		}
	}
	return newLock(l.Types), nil
}

func newLock(types []*lockType) *lock {
	l := &lock{Types: types, byName: map[string]*lockType{}, bySite: map[string]*lockType{}}
	for _, t := range types {
		if l.byName[t.Name] == nil {
			l.byName[t.Name] = t
		}
		if l.bySite[t.Site] == nil {
			l.bySite[t.Site] = t
		}
	}
	return l
}

func (l *lock) encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(lockHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(struct {
		Types []*lockType `yaml:"types"`
	}{l.Types}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// genKind is the schema kind of a class kind.
func genKind(k tkind) genmodel.Kind {
	switch k {
	case kEnum:
		return genmodel.KindEnum
	case kUnion:
		return genmodel.KindUnion
	}
	return genmodel.KindStruct
}

// fieldPointer reports whether the generator makes a member a Go pointer, and
// whether the question applies (arrays, maps and raw members are never pointers).
// It is the generator's rule: optional or nullable, unless a collection; or pinned.
func fieldPointer(f genmodel.Field) (ptr, applies bool) {
	e, err := genmodel.ParseTypeExpr(f.Type)
	if err != nil || e.Kind == genmodel.ExprArray || e.Kind == genmodel.ExprMap || (e.Kind == genmodel.ExprBuiltin && e.Name == "raw") {
		return false, false
	}
	return !f.Required || f.Nullable || f.Pointer, true
}

// pin applies the lock to an imported schema: a member once generated as a pointer
// keeps Pointer set when the spec now makes it a required, non-null value. It
// returns the members that were values and are now pointers: a break.
func (l *lock) pin(s *genmodel.Schema) []string {
	var breaks []string
	for i := range s.Types {
		t := &s.Types[i]
		lt := l.byName[t.Name]
		if lt == nil || t.Kind != genmodel.KindStruct {
			continue
		}
		ptrs, vals := set(lt.Pointers), set(lt.Values)
		for j := range t.Fields {
			f := &t.Fields[j]
			ptr, applies := fieldPointer(*f)
			switch {
			case !applies:
			case ptrs[f.JSON] && !ptr:
				f.Pointer = true
			case vals[f.JSON] && ptr:
				breaks = append(breaks, fmt.Sprintf("%s.%s", t.Name, f.JSON))
			}
		}
	}
	return breaks
}

// extend returns the lock with every type and member of s that it lacks, each new
// type at the site given by sites. Existing entries keep what they say; a member
// is added to the list its shape gives.
func (l *lock) extend(s *genmodel.Schema, sites map[string]string, version string) *lock {
	types := make([]*lockType, 0, len(l.Types)+len(s.Types))
	for _, t := range l.Types {
		c := *t
		c.Pointers = append([]string(nil), t.Pointers...)
		c.Values = append([]string(nil), t.Values...)
		types = append(types, &c)
	}
	out := newLock(types)
	for _, t := range s.Types {
		lt := out.byName[t.Name]
		if lt == nil {
			site := sites[t.Name]
			if site == "" {
				site = "overrides"
			}
			lt = &lockType{Name: t.Name, Kind: t.Kind, Site: site, Since: version}
			out.Types = append(out.Types, lt)
			out.byName[t.Name] = lt
			if out.bySite[site] == nil {
				out.bySite[site] = lt
			}
		}
		if t.Kind != genmodel.KindStruct || lt.Kind != genmodel.KindStruct {
			continue
		}
		known := set(lt.Pointers)
		for k := range set(lt.Values) {
			known[k] = true
		}
		for _, f := range t.Fields {
			ptr, applies := fieldPointer(f)
			if !applies || known[f.JSON] {
				continue
			}
			if ptr {
				lt.Pointers = append(lt.Pointers, f.JSON)
			} else {
				lt.Values = append(lt.Values, f.JSON)
			}
		}
		sort.Strings(lt.Pointers)
		sort.Strings(lt.Values)
	}
	sort.Slice(out.Types, func(i, j int) bool { return out.Types[i].Name < out.Types[j].Name })
	return out
}

func set(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

// yamlError formats a YAML error as "path:line: message" with the line where the
// text goes wrong: for a syntax error yaml.v3 reports the line where the
// enclosing block started, which can be far above, so the line is found as the
// first at which the text read so far stops parsing. Type errors (an unknown key,
// a wrong kind) carry right lines already.
func yamlError(path string, data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var parts []string
		for _, e := range te.Errors {
			if rest, ok := strings.CutPrefix(e, "line "); ok {
				if n, msg, ok := strings.Cut(rest, ": "); ok {
					parts = append(parts, fmt.Sprintf("%s:%s: %s", path, n, msg))
					continue
				}
			}
			parts = append(parts, path+": "+e)
		}
		return errors.New(strings.Join(parts, "\n"))
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if _, m, ok := strings.Cut(rest, ": "); ok {
			msg = m
		}
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for k := 1; k <= len(lines); k++ {
		var v any
		if yaml.Unmarshal(bytes.Join(lines[:k], nil), &v) != nil {
			return fmt.Errorf("%s:%d: %s", path, k, msg)
		}
	}
	return fmt.Errorf("%s: %s", path, msg)
}

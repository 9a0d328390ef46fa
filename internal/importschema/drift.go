package importschema

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

// The forge's TypeScript types: published more often than either JSON Schema
// source, but without integer vs float or formats, so they can say what the
// schema lacks (drift) and cannot drive Go types.
const (
	typesPackage = "@octokit/openapi-webhooks-types"
	typesFile    = "package/types.d.ts"
)

// tsPayload is one webhook of the types: its names and its payload's top-level
// members.
type tsPayload struct {
	key     string   // the webhook's key, such as "issues-opened"
	event   string   // the event header
	actions []string // the payload's action values; none for an event without actions
	members []string // the payload's top-level property names
}

var (
	tsBlockStart = regexp.MustCompile(`^export interface (\w+) \{$`)
	tsEntry      = regexp.MustCompile(`^  "?([^" ][^"]*?)"?: \{$`)
	tsPost       = regexp.MustCompile(`^    post: operations\["([^"]+)"\];`)
	tsSchemaRef  = regexp.MustCompile(`components\["schemas"\]\["([^"]+)"\]`)
	tsSchema     = regexp.MustCompile(`^    "?([^" /*][^"]*?)"?: (.*)$`)
	tsMember     = regexp.MustCompile(`^      "?([^" ?:/*][^"?:]*)"?\??: ?(.*)$`)
	tsOneMember  = regexp.MustCompile(`^          "?([^" ?:/*][^"?:]*)"?\??: ?(.*)$`) // in a whole-body OneOf<[{…}, …]>
	tsQuoted     = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

// parseTypes reads the webhooks of the types file (types.d.ts as
// openapi-typescript formats it): the webhooks interface names each webhook's
// operation, the operation (its prefix) the event and its payload schema, and
// the schema its members and action values.
func parseTypes(r io.Reader) ([]tsPayload, error) {
	type op struct{ schema string }
	type schema struct {
		members []string
		actions []string
		bases   []string // schemas it is an intersection with
		oneOf   bool     // a whole-body OneOf: the members of every variant
	}
	hookOps := map[string]string{} // webhook key → operation
	var hookKeys []string
	ops := map[string]*op{}
	schemas := map[string]*schema{}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	block, entry := "", ""
	var cur *schema
	inAction, inSchemas := false, false
	for sc.Scan() {
		line := sc.Text()
		if m := tsBlockStart.FindStringSubmatch(line); m != nil {
			block, entry, cur = m[1], "", nil
			continue
		}
		if line == "}" {
			block, entry, cur = "", "", nil
			continue
		}
		switch block {
		case "webhooks":
			if m := tsEntry.FindStringSubmatch(line); m != nil {
				entry = m[1]
				hookKeys = append(hookKeys, entry)
			} else if m := tsPost.FindStringSubmatch(line); m != nil && entry != "" {
				hookOps[entry] = m[1]
			}
		case "operations":
			if m := tsEntry.FindStringSubmatch(line); m != nil {
				entry = m[1]
				ops[entry] = &op{}
				continue
			}
			o := ops[entry]
			if o == nil {
				continue
			}
			if strings.Contains(line, `"application/json": `) {
				if m := tsSchemaRef.FindStringSubmatch(line); m != nil {
					o.schema = m[1]
				}
			}
		case "components":
			if line == "  schemas: {" {
				inSchemas = true
				continue
			}
			if line == "  };" {
				inSchemas = false
				continue
			}
			if !inSchemas {
				continue
			}
			if m := tsSchema.FindStringSubmatch(line); m != nil {
				cur = &schema{oneOf: strings.HasPrefix(m[2], "OneOf<")}
				schemas[m[1]] = cur
				for _, b := range tsSchemaRef.FindAllStringSubmatch(m[2], -1) {
					cur.bases = append(cur.bases, b[1])
				}
				inAction = false
				continue
			}
			if cur == nil {
				continue
			}
			re := tsMember
			if cur.oneOf {
				re = tsOneMember
			}
			if m := re.FindStringSubmatch(line); m != nil {
				cur.members = append(cur.members, m[1])
				inAction = m[1] == "action"
				if inAction {
					for _, q := range tsQuoted.FindAllStringSubmatch(m[2], -1) {
						cur.actions = append(cur.actions, q[1])
					}
					inAction = !strings.HasSuffix(m[2], ";")
				}
				continue
			}
			if inAction {
				for _, q := range tsQuoted.FindAllStringSubmatch(line, -1) {
					cur.actions = append(cur.actions, q[1])
				}
				if strings.HasSuffix(line, ";") {
					inAction = false
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(hookKeys) == 0 {
		return nil, fmt.Errorf("%w: no webhooks interface in the types", errSpec)
	}

	var resolve func(name string, depth int) (members, actions []string)
	resolve = func(name string, depth int) ([]string, []string) {
		s := schemas[name]
		if s == nil || depth > 20 {
			return nil, nil
		}
		members, actions := append([]string(nil), s.members...), append([]string(nil), s.actions...)
		for _, b := range s.bases {
			bm, ba := resolve(b, depth+1)
			members = append(members, bm...)
			if len(actions) == 0 {
				actions = ba
			}
		}
		return members, actions
	}
	var out []tsPayload
	for _, key := range hookKeys {
		o := ops[hookOps[key]]
		if o == nil || o.schema == "" {
			return nil, fmt.Errorf("%w: webhook %q: no operation with a JSON payload in the types", errSpec, key)
		}
		// The operation's prefix, as the importer reads x-github.subcategory (the
		// types' event-header examples are wrong for a few events).
		event, _, _ := strings.Cut(hookOps[key], "/")
		event = strings.ReplaceAll(event, "-", "_")
		members, actions := resolve(o.schema, 0)
		if len(members) == 0 {
			return nil, fmt.Errorf("%w: webhook %q: payload schema %q has no members in the types", errSpec, key, o.schema)
		}
		out = append(out, tsPayload{key: key, event: event, actions: uniq(actions), members: uniq(members)})
	}
	return out, nil
}

func uniq(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// drift lists what the types know that the schema does not: each event or
// event.action name it lacks ("name NAME (webhook KEY)"), and each top-level
// payload member its payload type lacks ("member NAME.KEY"), sorted.
func drift(s *genmodel.Schema, types []tsPayload) []string {
	events := map[string]*genmodel.Event{}
	for i := range s.Events {
		events[s.Events[i].Name] = &s.Events[i]
	}
	typeByName := map[string]*genmodel.Type{}
	for i := range s.Types {
		typeByName[s.Types[i].Name] = &s.Types[i]
	}
	var out []string
	seen := map[string]bool{}
	add := func(line string) {
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	for _, p := range types {
		e := events[p.event]
		if e == nil {
			add(fmt.Sprintf("name %s (webhook %s)", p.event, p.key))
			continue
		}
		check := func(name, typ string) {
			t := typeByName[typ]
			if t == nil {
				return
			}
			has := map[string]bool{}
			for _, f := range t.Fields {
				has[f.JSON] = true
			}
			for _, m := range p.members {
				if !has[m] {
					add(fmt.Sprintf("member %s.%s (webhook %s)", name, m, p.key))
				}
			}
		}
		if len(p.actions) == 0 || e.OtherActionsType != "" && len(e.Actions) == 0 {
			if e.Type != "" {
				check(e.Name, e.Type)
			}
			continue
		}
		for _, act := range p.actions {
			var a *genmodel.Action
			for i := range e.Actions {
				if e.Actions[i].Name == act {
					a = &e.Actions[i]
				}
			}
			name := e.Name + "." + act
			switch {
			case a != nil:
				check(name, a.Type)
			case e.OtherActionsType != "":
				check(name, e.OtherActionsType)
			default:
				add(fmt.Sprintf("name %s (webhook %s)", name, p.key))
			}
		}
	}
	sort.Strings(out)
	return out
}

// readTypes reads types.d.ts from a file (gunzipping a ".gz" one) or, given a
// version or tag, from that version of the types package via npm pack.
func readTypes(src string) ([]tsPayload, string, error) {
	var data []byte
	from := src
	if strings.HasSuffix(src, ".ts") || strings.HasSuffix(src, ".gz") {
		d, err := os.ReadFile(src)
		if err != nil {
			return nil, "", err
		}
		if strings.HasSuffix(src, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(d))
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", src, err)
			}
			if d, err = io.ReadAll(zr); err != nil {
				return nil, "", fmt.Errorf("%s: %w", src, err)
			}
		}
		data = d
	} else {
		tmp, err := os.MkdirTemp("", "importschema-types-")
		if err != nil {
			return nil, "", err
		}
		defer os.RemoveAll(tmp)
		p, err := npmPack(typesPackage, src, tmp)
		if err != nil {
			return nil, "", err
		}
		tgz, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		files, err := extractFiles(tgz, func(n string) bool { return n == typesFile || n == "package/package.json" })
		if err != nil {
			return nil, "", fmt.Errorf("%s@%s: %w", typesPackage, src, err)
		}
		if data = files[typesFile]; data == nil {
			return nil, "", fmt.Errorf("%s@%s: no %s", typesPackage, src, typesFile)
		}
		from = typesPackage + "@" + src
		if v := tsPackageVersion(files["package/package.json"]); v != "" {
			from = typesPackage + "@" + v
		}
	}
	ps, err := parseTypes(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", from, err)
	}
	return ps, from, nil
}

func tsPackageVersion(pkg []byte) string {
	m := regexp.MustCompile(`"version":\s*"([^"]+)"`).FindSubmatch(pkg)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// runDrift is importschema -drift: it prints what the types know that the
// schema in dir lacks, one line each, and returns 1 when there is anything, 0
// when nothing.
func runDrift(src, dir string, stdout, stderr io.Writer) int {
	s, err := genmodel.Load(dir)
	if err != nil {
		fmt.Fprintf(stderr, "importschema: %v\n", err)
		return 1
	}
	types, from, err := readTypes(src)
	if err != nil {
		fmt.Fprintf(stderr, "importschema: drift: %v\n", err)
		return 1
	}
	lines := drift(s, types)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintf(stderr, "importschema: drift against %s (%d webhooks): %d\n", from, len(types), len(lines))
	if len(lines) > 0 {
		return 1
	}
	return 0
}

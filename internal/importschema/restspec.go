package importschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The second source: the forge's whole REST description, which carries the
// webhooks under "x-webhooks" in the OpenAPI 3.0 dialect and is published more
// often than the webhook-only package. The importer keeps only what the webhooks
// reach (restPrune) and adds the webhooks the first source lacks (mergeRest).
const (
	restPackage = "@octokit/openapi"
	restDir     = "rest" // schema/source/rest/NAME.json.gz: the pruned copies
)

// restPrune returns the parts of a REST description the webhooks need: its
// "openapi" and "info", "x-webhooks", and the component schemas and examples the
// webhooks reach, in the description's order. The rest (paths, parameters,
// responses) is never read, and is most of the 13 MB.
func restPrune(doc *jnode) (*jnode, error) {
	whs := doc.get("x-webhooks")
	if whs == nil || whs.kind != jObject || len(whs.keys) == 0 {
		return nil, fmt.Errorf("%w: no x-webhooks object", errSpec)
	}
	comps := doc.get("components")
	if comps.path("schemas") == nil || comps.get("schemas").kind != jObject {
		return nil, fmt.Errorf("%w: no components.schemas object", errSpec)
	}
	reach, err := reachRefs(comps, whs)
	if err != nil {
		return nil, err
	}
	keptComps := &jnode{kind: jObject}
	for _, section := range []string{"schemas", "examples"} {
		all := comps.get(section)
		if all == nil {
			continue
		}
		kept := &jnode{kind: jObject}
		for i, k := range all.keys {
			if reach[section+"/"+k] {
				kept.set(k, all.vals[i])
			}
		}
		keptComps.set(section, kept)
	}
	out := &jnode{kind: jObject}
	for _, k := range []string{"openapi", "info"} {
		if v := doc.get(k); v != nil {
			out.set(k, v)
		}
	}
	out.set("x-webhooks", whs)
	out.set("components", keptComps)
	return out, nil
}

// reachRefs returns the components ("schemas/NAME", "examples/NAME") that the
// roots reach through "$ref", transitively.
func reachRefs(comps *jnode, roots ...*jnode) (map[string]bool, error) {
	const prefix = "#/components/"
	seen := map[string]bool{}
	var walk func(n *jnode) error
	walk = func(n *jnode) error {
		switch n.kind {
		case jArray:
			for _, e := range n.elems {
				if err := walk(e); err != nil {
					return err
				}
			}
		case jObject:
			for i, k := range n.keys {
				v := n.vals[i]
				if k == "$ref" && v.kind == jString {
					name, ok := strings.CutPrefix(v.str, prefix)
					section, _, _ := strings.Cut(name, "/")
					if !ok || (section != "schemas" && section != "examples") {
						return fmt.Errorf("%w: $ref %q is not a component schema or example", errSpec, v.str)
					}
					if seen[name] {
						continue
					}
					c := comps.path(strings.SplitN(name, "/", 2)...)
					if c == nil {
						return fmt.Errorf("%w: $ref to missing component %q", errSpec, name)
					}
					seen[name] = true
					if err := walk(c); err != nil {
						return err
					}
					continue
				}
				if err := walk(v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := walk(r); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// reachComponents returns the component schemas (by name) that the roots reach;
// examples are not followed (the merged spec never carries them).
func reachComponents(comps *jnode, roots ...*jnode) (map[string]bool, error) {
	all, err := reachRefs(&jnode{kind: jObject, keys: []string{"schemas"}, vals: []*jnode{comps}}, stripExamples(roots)...)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for k := range all {
		if name, ok := strings.CutPrefix(k, "schemas/"); ok {
			out[name] = true
		}
	}
	return out, nil
}

// stripExamples returns copies of webhooks without their request bodies'
// examples, which name component examples: a merged spec carries schemas only.
func stripExamples(ns []*jnode) []*jnode {
	out := make([]*jnode, len(ns))
	for i, n := range ns {
		out[i] = withoutExamples(n)
	}
	return out
}

// withoutExamples copies a webhook without post.requestBody.content.*.examples
// (a property named "examples" in a schema stays).
func withoutExamples(hook *jnode) *jnode {
	content := hook.path("post", "requestBody", "content")
	if content == nil || content.kind != jObject {
		return hook
	}
	nc := &jnode{kind: jObject}
	for i, k := range content.keys {
		nc.set(k, without(content.vals[i], "examples"))
	}
	body := hook.path("post", "requestBody")
	post := hook.get("post")
	return with(hook, "post", with(post, "requestBody", with(body, "content", nc)))
}

// without copies an object without one member (a shallow copy).
func without(n *jnode, key string) *jnode {
	if n.kind != jObject {
		return n
	}
	c := &jnode{kind: jObject}
	for i, k := range n.keys {
		if k != key {
			c.keys = append(c.keys, k)
			c.vals = append(c.vals, n.vals[i])
		}
	}
	return c
}

// with copies an object with one member replaced (a shallow copy).
func with(n *jnode, key string, v *jnode) *jnode {
	c := &jnode{kind: jObject, keys: append([]string(nil), n.keys...), vals: append([]*jnode(nil), n.vals...)}
	c.set(key, v)
	return c
}

// set adds or replaces an object's member, keeping the order of the others.
func (n *jnode) set(key string, v *jnode) {
	for i, k := range n.keys {
		if k == key {
			n.vals[i] = v
			return
		}
	}
	n.keys = append(n.keys, key)
	n.vals = append(n.vals, v)
}

// to31 returns a copy of a 3.0 schema node in the 3.1 dialect the first source
// uses, as that package's own conversion writes it: "nullable: true" becomes
// "null" in the type list (a type list of "null" alone where the node has no
// type: its oneOf, anyOf or allOf says the rest). Member order is kept; a
// property named "nullable" is an object, never the keyword's boolean.
func to31(n *jnode) *jnode {
	switch n.kind {
	case jArray:
		c := &jnode{kind: jArray, elems: make([]*jnode, len(n.elems))}
		for i, e := range n.elems {
			c.elems[i] = to31(e)
		}
		return c
	case jObject:
	default:
		return n
	}
	c := &jnode{kind: jObject}
	nullable := false
	if v := n.get("nullable"); v != nil && v.kind == jBool && v.bool {
		nullable = true
	}
	for i, k := range n.keys {
		v := n.vals[i]
		switch {
		case k == "nullable" && v.kind == jBool:
			continue
		case k == "type" && nullable && v.kind == jString:
			c.keys = append(c.keys, "type")
			c.vals = append(c.vals, &jnode{kind: jArray, elems: []*jnode{v, {kind: jString, str: "null"}}})
			continue
		}
		c.keys = append(c.keys, k)
		c.vals = append(c.vals, to31(v))
	}
	if nullable && !n.has("type") {
		c.keys = append(c.keys, "type")
		c.vals = append(c.vals, &jnode{kind: jArray, elems: []*jnode{{kind: jString, str: "null"}}})
	}
	return c
}

// restAdded is one webhook the second source added to a first-source spec.
type restAdded struct {
	key     string // the webhook's key, such as "pull-request-stacked"
	variant string // the second source's file it came from
}

// mergeRest adds to a first-source spec (its "webhooks") every webhook of the
// second-source specs (pruned, 3.0) that the first lacks, in the 3.1 dialect,
// with the component schemas it reaches. rests are tried in order: the first that
// has a key gives its definition. A component the first source has with other
// content is added under a name of its own (NAME-rest-VARIANT), so that no
// existing definition changes. It returns the merged spec and what it added.
func mergeRest(base *jnode, rests []namedSpec, keys func(variant, key string) bool) (*jnode, []restAdded, error) {
	whs := base.get("webhooks")
	comps := base.path("components", "schemas")
	if whs == nil || whs.kind != jObject || comps == nil || comps.kind != jObject {
		return nil, nil, fmt.Errorf("%w: no webhooks or components.schemas object", errSpec)
	}
	var added []restAdded
	for _, r := range rests {
		rwhs := r.doc.get("x-webhooks")
		rcomps := r.doc.path("components", "schemas")
		if rwhs == nil || rcomps == nil {
			return nil, nil, fmt.Errorf("%w: %s: no x-webhooks or components.schemas", errSpec, r.name)
		}
		renames := map[string]string{} // this rest's component → its name in base
		for i, key := range rwhs.keys {
			if whs.has(key) || (keys != nil && !keys(r.name, key)) {
				continue
			}
			hook := rwhs.vals[i]
			reach, err := reachComponents(rcomps, hook)
			if err != nil {
				return nil, nil, fmt.Errorf("%s %s: %w", r.name, key, err)
			}
			for _, name := range sortedKeys(reach) {
				if _, done := renames[name]; done {
					continue
				}
				if existing := comps.get(name); existing == nil || sameJSON(existing, to31(rcomps.get(name))) {
					renames[name] = name
				} else {
					renames[name] = name + "-rest-" + r.name
				}
			}
			for _, name := range sortedKeys(reach) {
				to := renames[name]
				if comps.has(to) {
					continue
				}
				comps.set(to, renameRefs(to31(rcomps.get(name)), renames))
			}
			whs.set(key, renameRefs(to31(withoutExamples(hook)), renames))
			added = append(added, restAdded{key: key, variant: r.name})
		}
	}
	sortObject(whs)
	return base, added, nil
}

// namedSpec is a parsed spec and the variant it is of.
type namedSpec struct {
	name string
	doc  *jnode
}

// renameRefs rewrites, in place, the component "$ref"s of n that renames maps to
// another name.
func renameRefs(n *jnode, renames map[string]string) *jnode {
	switch n.kind {
	case jArray:
		for _, e := range n.elems {
			renameRefs(e, renames)
		}
	case jObject:
		for i, k := range n.keys {
			v := n.vals[i]
			if k == "$ref" && v.kind == jString {
				if name, err := refName(v.str); err == nil && renames[name] != "" && renames[name] != name {
					n.vals[i] = &jnode{kind: jString, str: "#/components/schemas/" + renames[name]}
				}
				continue
			}
			renameRefs(v, renames)
		}
	}
	return n
}

// sortObject sorts an object's members by name (the webhooks object is sorted in
// both sources).
func sortObject(n *jnode) {
	idx := make([]int, len(n.keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return n.keys[idx[a]] < n.keys[idx[b]] })
	keys := make([]string, len(idx))
	vals := make([]*jnode, len(idx))
	for i, j := range idx {
		keys[i], vals[i] = n.keys[j], n.vals[j]
	}
	n.keys, n.vals = keys, vals
}

// sameJSON reports whether two nodes encode to the same JSON.
func sameJSON(a, b *jnode) bool {
	return bytes.Equal(encodeJSON(a), encodeJSON(b))
}

// encodeJSON renders a node as compact JSON, members in their order: the same
// tree always gives the same bytes.
func encodeJSON(n *jnode) []byte {
	var b bytes.Buffer
	n.encode(&b)
	return b.Bytes()
}

func (n *jnode) encode(b *bytes.Buffer) {
	switch n.kind {
	case jNull:
		b.WriteString("null")
	case jBool:
		if n.bool {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case jNumber:
		b.WriteString(n.str)
	case jString:
		writeJSONString(b, n.str)
	case jArray:
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			e.encode(b)
		}
		b.WriteByte(']')
	case jObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			n.vals[i].encode(b)
		}
		b.WriteByte('}')
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
}

// webhookEvent returns the event name of a webhook of a spec, as readHooks names
// it, or "".
func webhookEvent(hook *jnode) string {
	return strings.ReplaceAll(hook.path("post", "x-github").text("subcategory"), "-", "_")
}

// restRecord says which version of the second source the pruned copies in
// schema/source/rest are, and which webhooks the import took from it.
type restRecord struct {
	Package       string `yaml:"package"`
	Version       string `yaml:"version"`
	TarballSHA256 string `yaml:"tarball_sha256"` // of the npm package tarball
	// Variants are its spec files, each pruned (restPrune) and compressed as
	// rest/NAME.json.gz; sha256 is of the pruned JSON.
	Variants []variantRecord `yaml:"variants"`
	// Webhooks are the webhook keys the first source lacks, each with the file
	// its definition was taken from: every other webhook is the first source's.
	Webhooks []restWebhook `yaml:"webhooks,omitempty"`
}

// restWebhook is one webhook taken from the second source.
type restWebhook struct {
	Key     string `yaml:"key"`
	Variant string `yaml:"variant"`
}

// restVariantOrder sorts the second source's variants for the main spec's merge:
// the main variant first, then the others newest first (ghec, then ghes by
// descending version), so that a webhook the main variant lacks takes the newest
// definition any variant publishes.
func restVariantOrder(names []string) []string {
	out := append([]string(nil), names...)
	rank := func(n string) int {
		switch {
		case n == mainVariant:
			return 0
		case n == "ghec":
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri < rj
		}
		return compareVersions(strings.TrimPrefix(out[i], "ghes-"), strings.TrimPrefix(out[j], "ghes-")) > 0
	})
	return out
}

// compareVersions compares dotted numbers ("3.19" > "3.9").
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscan(as[i], &x)
		}
		if i < len(bs) {
			fmt.Sscan(bs[i], &y)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return strings.Compare(a, b)
}

// withRest merges the second source into the first: each first-source variant
// gains the webhooks its namesake in rest has and it lacks; the main spec gains,
// besides, every webhook that only the second source publishes, in any variant
// (its newest definition), so that it is typed; the variants without it are
// then marked, the main variant among them (it is returned as a variant of its
// own, mainVariant, when the main spec took such a webhook). rest maps variant
// names to pruned 3.0 specs; it returns the merged main spec, the merged variants
// and the webhooks taken from rest, sorted by key.
func withRest(main []byte, variants map[string][]byte, rest map[string][]byte) ([]byte, map[string][]byte, []restWebhook, error) {
	if len(rest) == 0 {
		return main, variants, nil, nil
	}
	parsed := map[string]*jnode{}
	for name, data := range rest {
		n, err := parseJSON(data)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s %s: %w", restPackage, name, err)
		}
		parsed[name] = n
	}
	first := map[string]bool{} // every webhook key any first-source file has
	firstDocs := map[string]*jnode{}
	for name, data := range variants {
		n, err := parseJSON(data)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("variant %s: %w", name, err)
		}
		firstDocs[name] = n
	}
	mainDoc, err := parseJSON(main)
	if err != nil {
		return nil, nil, nil, err
	}
	firstDocs[mainVariant] = mainDoc
	for _, n := range firstDocs {
		if w := n.get("webhooks"); w != nil {
			for _, k := range w.keys {
				first[k] = true
			}
		}
	}
	order := restVariantOrder(sortedKeys(parsed))

	outVariants := map[string][]byte{}
	for _, name := range sortedKeys(variants) {
		doc := firstDocs[name]
		if r := parsed[name]; r != nil {
			if doc, _, err = mergeRest(doc, []namedSpec{{name, r}}, nil); err != nil {
				return nil, nil, nil, fmt.Errorf("variant %s: %w", name, err)
			}
		}
		outVariants[name] = encodeJSON(doc)
	}

	// The main variant as the forge's own server sends it, before the webhooks of
	// other variants join it; kept only when some do.
	var mainOnly []byte
	if r := parsed[mainVariant]; r != nil {
		d, err := parseJSON(main)
		if err != nil {
			return nil, nil, nil, err
		}
		if d, _, err = mergeRest(d, []namedSpec{{mainVariant, r}}, nil); err != nil {
			return nil, nil, nil, err
		}
		mainOnly = encodeJSON(d)
	}
	var rests []namedSpec
	for _, name := range order {
		rests = append(rests, namedSpec{name, parsed[name]})
	}
	merged, added, err := mergeRest(mainDoc, rests, func(variant, key string) bool {
		return variant == mainVariant || !first[key]
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var took []restWebhook
	others := false
	for _, a := range added {
		took = append(took, restWebhook{Key: a.key, Variant: a.variant})
		if a.variant != mainVariant {
			others = true
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i].Key < took[j].Key })
	if others {
		if mainOnly == nil {
			mainOnly = main
		}
		outVariants[mainVariant] = mainOnly
	}
	return encodeJSON(merged), outVariants, took, nil
}

// restFile is a second-source spec file inside its package tarball.
func restFile(variant string) string { return specDir + variant + ".json" }

// fetchRest downloads the given version (or tag) of the second source via npm,
// prunes each variant's spec (restPrune) and checks it; nothing is written. A
// version old records must give its tarball's checksum.
func fetchRest(version string, old *restRecord) (*restRecord, map[string][]byte, error) {
	tmp, err := os.MkdirTemp("", "importschema-rest-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	tgzPath, err := npmPack(restPackage, version, tmp)
	if err != nil {
		return nil, nil, err
	}
	tgz, err := os.ReadFile(tgzPath)
	if err != nil {
		return nil, nil, err
	}
	files, err := extractFiles(tgz, func(name string) bool {
		rest := strings.TrimPrefix(name, specDir)
		return name == "package/package.json" || (rest != name && strings.HasSuffix(rest, ".json") &&
			!strings.HasSuffix(rest, ".deref.json") && !strings.Contains(rest, "/"))
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s@%s: %w", restPackage, version, err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(files["package/package.json"], &pkg); err != nil || pkg.Version == "" {
		return nil, nil, fmt.Errorf("%s@%s: package/package.json has no version", restPackage, version)
	}
	if pkg.Version != version && isVersion(version) {
		return nil, nil, fmt.Errorf("%s@%s: the package says it is version %s", restPackage, version, pkg.Version)
	}
	rec := &restRecord{Package: restPackage, Version: pkg.Version, TarballSHA256: sha256Hex(tgz)}
	if old != nil && old.Version == rec.Version && old.TarballSHA256 != rec.TarballSHA256 {
		return nil, nil, fmt.Errorf("%s@%s: %w: tarball %s, the record says %s", restPackage, rec.Version, errChecksum, rec.TarballSHA256, old.TarballSHA256)
	}
	specs := map[string][]byte{}
	for _, name := range sortedKeys(files) {
		if name == "package/package.json" {
			continue
		}
		doc, err := parseJSON(files[name])
		if err != nil {
			return nil, nil, fmt.Errorf("%s@%s %s: %w", restPackage, rec.Version, name, err)
		}
		if doc.get("x-webhooks") == nil {
			continue // a description without webhooks has nothing for the import
		}
		pruned, err := restPrune(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("%s@%s %s: %w", restPackage, rec.Version, name, err)
		}
		data := encodeJSON(pruned)
		variant := strings.TrimSuffix(strings.TrimPrefix(name, specDir), ".json")
		rec.Variants = append(rec.Variants, variantRecord{Name: variant, File: name, SHA256: sha256Hex(data)})
		specs[variant] = data
	}
	if specs[mainVariant] == nil {
		return nil, nil, fmt.Errorf("%s@%s: %s has no x-webhooks", restPackage, rec.Version, restFile(mainVariant))
	}
	return rec, specs, nil
}

// readRest reads the committed pruned copies the record lists, each checked
// against its checksum.
func readRest(dir string, rec *restRecord) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, v := range rec.Variants {
		d, err := readSpec(filepath.Join(dir, restDir, v.Name+".json.gz"), &record{SHA256: v.SHA256})
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", rec.Package, v.Name, err)
		}
		out[v.Name] = d
	}
	return out, nil
}

func sameWebhooks(a, b []restWebhook) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package importschema

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"

	genmodel "forgehooks.dev/forgehooks/gen/model"
	"forgehooks.dev/forgehooks/internal/goname"
)

// brandRE finds the forge's brand, dropped from names made from the spec's titles:
// our identifiers say "forge", never a real forge's brand.
var brandRE = regexp.MustCompile(`(?i)github`)

// words splits text into words at non-alphanumerics and case changes, keeping
// their case; a run of capitals ends before a capital that starts a word
// ("HTMLParser" → HTML, Parser).
func words(s string) []string { return goname.TitleWords(s) }

// goName turns text into an exported Go name: words capitalised, initialisms in
// capitals ("html_url" → "HTMLURL"). A name starting with a digit gets an "N".
func goName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		b.WriteString(goWord(w))
	}
	n := b.String()
	if n != "" && unicode.IsDigit(rune(n[0])) {
		n = "N" + n
	}
	return n
}

func goWord(w string) string {
	if len(w) > 1 && strings.ToUpper(w) == w && strings.ToLower(w) != w {
		return w // a run of capitals written so in a title
	}
	return genmodel.GoWord(w)
}

// titleName turns a schema title or component name into a type name, without the
// brand and the spec's "webhook" decorations of component names.
func titleName(s string, component bool) string {
	s = brandRE.ReplaceAllString(s, " ")
	ws := words(s)
	var keep []string
	for i, w := range ws {
		w = strings.ToLower(w)
		if component && (w == "webhooks" || w == "webhook") && (i == 0 || i == len(ws)-1) {
			continue
		}
		if component && i == len(ws)-1 && isDigits(w) {
			continue // "webhooks_issue_2"
		}
		keep = append(keep, w)
	}
	var b strings.Builder
	for _, w := range keep {
		b.WriteString(goWord(w))
	}
	n := b.String()
	if n != "" && unicode.IsDigit(rune(n[0])) {
		n = "N" + n
	}
	return n
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// familyName is the name a term's title (or, untitled, its component name) gives.
func familyName(t *term) string {
	if t.title != "" {
		return titleName(t.title, false)
	}
	if t.comp != "" {
		return titleName(t.comp, true)
	}
	return ""
}

// weakFamily reports whether a term's family name says little: a title written
// like an identifier ("creation", "pull_request") or one of the spec's generated
// "webhooks_*" component names.
func weakFamily(t *term) bool {
	if t.title != "" {
		return !strings.ContainsAny(t.title, " ") && strings.ToLower(t.title) == t.title
	}
	return strings.HasPrefix(t.comp, "webhooks_") || strings.HasPrefix(t.comp, "webhook-")
}

// singular makes the last word of a plural key singular: "labels" → "label",
// "statuses" → "status", "entries" → "entry".
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "ches"),
		strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "uses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s") && len(w) > 2:
		return w[:len(w)-1]
	}
	return w
}

// keyName is the name part a member key gives; element names are singular.
func keyName(key string, elem bool) string {
	ws := words(strings.ToLower(key))
	if len(ws) == 0 {
		return ""
	}
	if elem {
		ws[len(ws)-1] = singular(ws[len(ws)-1])
	}
	return goName(strings.Join(ws, "_"))
}

// payloadTypeName names the payload struct of an event.action: "issues" "opened"
// → IssuesOpenedEvent; "push" → PushEvent.
func payloadTypeName(event, action string) string {
	return goName(event) + goName(action) + "Event"
}

// use is one place a class is used: a member of a struct class or a variant of a
// union class.
type use struct {
	parent *class
	key    string // the member's key; "" for a variant
	elem   bool   // inside an array or map
	hint   string // for a variant: a name part that tells it apart
}

// namer gives every class a Go name.
type namer struct {
	m       *model
	taken   map[string]*class
	uses    map[*class][]use
	renames map[string]string // overrides: automatic name → wanted name
	renamed map[string]bool   // renames that applied
	actions map[string]int    // payloads per event
	lock    *lock             // names once emitted, found again by site
	locked  map[string]bool   // lock names claimed by this import
	err     error             // the first rename into a taken name
}

// site is where a use sits, as the lock records it: "Parent.member" ("[]" added
// for an array or map element) or "Union|hint" for a union's variant.
func (u use) site() string {
	p := u.parent.find().name
	if u.key == "" {
		return p + "|" + u.hint
	}
	if u.elem {
		return p + "." + u.key + "[]"
	}
	return p + "." + u.key
}

// claimLocked gives cl the lock's name for a site, when the lock has one of cl's
// kind that no other class took.
func (n *namer) claimLocked(cl *class, site string) (bool, error) {
	lt := n.lock.bySite[site]
	if lt == nil || n.locked[lt.Name] || lt.Kind != genKind(cl.kind) || n.taken[lt.Name] != nil {
		return false, nil
	}
	n.locked[lt.Name] = true
	n.taken[lt.Name] = cl
	cl.name = lt.Name
	for from, to := range n.renames {
		if to == lt.Name {
			n.renamed[from] = true // the rename made this name once; it still holds
		}
	}
	return true, nil
}

// assignNames names every class: payloads after their event.action, titled classes
// after their title (the most used title when several), the rest after where they
// are used ("IssueState": member "state" of Issue). Names never collide; a number
// is the last resort and is reported.
//
// Names in the lock come first: a payload keeps the name its event.action had, and
// a type found at a site the lock records keeps that site's name, so a name once
// emitted never moves to another type and never changes because the spec added
// something. The rules above name only what the lock does not know, and never take
// a locked name another type holds. It returns the renames that applied and the
// site of every named class (where the lock finds it next time).
func (m *model) assignNames(renames map[string]string, lk *lock) (applied map[string]bool, sites map[*class]string, err error) {
	if lk == nil {
		lk = newLock(nil)
	}
	n := &namer{m: m, taken: map[string]*class{}, uses: map[*class][]use{}, renames: renames, renamed: map[string]bool{}, actions: map[string]int{},
		lock: lk, locked: map[string]bool{}}
	for _, h := range m.hooks {
		n.actions[h.event]++
	}
	// Only the types the payloads use get a name (and are written).
	live := m.reachableSet()
	var classes []*class
	for _, cl := range m.classes {
		if live[cl] {
			classes = append(classes, cl)
			n.collectUses(cl)
		}
	}
	// 1. Payloads.
	for _, h := range m.hooks {
		cl := h.body.cls.find()
		if ok, err := n.claimLocked(cl, h.name()); err != nil || ok {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		if err := n.claim(cl, payloadTypeName(h.event, h.action)); err != nil {
			return nil, nil, err
		}
	}
	// 1b. What the lock names, found by site from named users, until nothing more is.
	for progress := true; progress; {
		progress = false
		for _, cl := range classes {
			if cl.name != "" {
				continue
			}
			us := append([]use(nil), n.uses[cl]...)
			sort.SliceStable(us, func(i, j int) bool { return us[i].key < us[j].key })
			for _, u := range us {
				if u.parent.find().name == "" {
					continue
				}
				ok, err := n.claimLocked(cl, u.site())
				if err != nil {
					return nil, nil, err
				}
				if ok {
					progress = true
					break
				}
			}
		}
	}
	// 2. Titled classes, most used first. Weak names (identifier-like titles such
	// as "creation", the spec's "webhooks_*" component names) only serve when the
	// context gives nothing better.
	type cand struct {
		cl    *class
		name  string
		votes int
	}
	var titled []cand
	weak := map[*class]string{}
	for _, cl := range classes {
		if cl.name != "" || cl.synth {
			continue
		}
		votes, weakVotes := map[string]int{}, map[string]int{}
		for _, t := range cl.members {
			if f := familyName(t); f != "" {
				if weakFamily(t) {
					weakVotes[f] += max(t.uses, 1)
				} else {
					votes[f] += max(t.uses, 1)
				}
			}
		}
		if best, total := bestVote(votes); best != "" {
			titled = append(titled, cand{cl, best, total})
		} else if best, _ := bestVote(weakVotes); best != "" {
			weak[cl] = best
		}
	}
	sort.SliceStable(titled, func(i, j int) bool {
		if titled[i].votes != titled[j].votes {
			return titled[i].votes > titled[j].votes
		}
		if titled[i].name != titled[j].name {
			return titled[i].name < titled[j].name
		}
		return titled[i].cl.id < titled[j].cl.id
	})
	family := map[*class]string{}
	for _, c := range titled {
		family[c.cl] = c.name
		if n.freeFor(c.cl, c.name) {
			if err := n.claim(c.cl, c.name); err != nil {
				return nil, nil, err
			}
		}
	}
	// 3. The rest, after their users, in rounds: a class is named once every class
	// that uses it is.
	for {
		var ready []*class
		var waiting []*class
		for _, cl := range classes {
			if cl.name != "" {
				continue
			}
			waiting = append(waiting, cl)
			ok := len(n.uses[cl]) > 0
			for _, u := range n.uses[cl] {
				ok = ok && u.parent.find().name != ""
			}
			if ok {
				ready = append(ready, cl)
			}
		}
		if len(waiting) == 0 {
			break
		}
		if len(ready) == 0 {
			// A cycle, or classes nobody uses: name them after any named user.
			for _, cl := range waiting {
				for _, u := range n.uses[cl] {
					if u.parent.find().name != "" {
						ready = append(ready, cl)
						break
					}
				}
			}
			if len(ready) == 0 {
				for _, cl := range waiting {
					if len(n.uses[cl]) == 0 {
						ready = append(ready, cl) // unused: named by number below
					}
				}
			}
			if len(ready) == 0 {
				return nil, nil, fmt.Errorf("cannot name %d types: their users are never named", len(waiting))
			}
		}
		for _, cl := range ready {
			cands := n.contextNames(cl, family[cl], weak[cl])
			if err := n.claimFirst(cl, cands); err != nil {
				return nil, nil, err
			}
		}
	}
	if n.err != nil {
		return nil, nil, n.err
	}
	// Every class's site: its first use in order, for the lock.
	sites = map[*class]string{}
	for _, h := range m.hooks {
		sites[h.body.cls.find()] = h.name()
	}
	for _, cl := range classes {
		if _, ok := sites[cl]; ok {
			continue
		}
		for _, u := range n.uses[cl] {
			if st := u.site(); sites[cl] == "" || st < sites[cl] {
				sites[cl] = st
			}
		}
	}
	return n.renamed, sites, nil
}

// collectUses records where the members of cl's definition point.
func (n *namer) collectUses(cl *class) {
	var walk func(t texpr, key string, elem bool)
	walk = func(t texpr, key string, elem bool) {
		t = t.resolved()
		switch {
		case t.cls != nil:
			c := t.cls.find()
			n.uses[c] = append(n.uses[c], use{parent: cl, key: key, elem: elem})
		case t.elem != nil:
			walk(*t.elem, key, true)
		}
	}
	for _, f := range cl.fields {
		walk(f.t, f.key, false)
	}
	for i, v := range cl.variants {
		if cl.alias != nil {
			break
		}
		v = v.resolved()
		if v.cls != nil {
			c := v.cls.find()
			n.uses[c] = append(n.uses[c], use{parent: cl, hint: variantHint(cl, i)})
		} else if v.elem != nil {
			walk(*v.elem, "item", true)
		}
	}
}

// variantHint is the name part of a union's variant: its distinguishing key, when
// the union tells objects apart by keys, else its JSON kind.
func variantHint(u *class, i int) string {
	if i < len(u.matches) {
		mt := u.matches[i]
		for k, v := range mt.Equals {
			return goName(v) + goName(k)
		}
		if len(mt.Has) > 0 {
			return goName(mt.Has[0])
		}
	}
	v := u.variants[i].resolved()
	if v.cls != nil && v.k == kStruct {
		return "Object"
	}
	return ""
}

// contextNames lists candidate names for cl from its users, best first: the user's
// name and the member's key ("IssueState"); a variant is named after its union and
// its title or distinguishing key. A family name taken by another type is
// qualified by the user's name; a weak family name is the last resort.
func (n *namer) contextNames(cl *class, family, weak string) []string {
	uses := n.uses[cl]
	// Used by several payloads of one event only: named after the event.
	eventBase := ""
	payloads := map[*class]bool{}
	for _, u := range uses {
		p := u.parent.find()
		ev, _, _ := strings.Cut(p.body, ".")
		if p.body == "" || (eventBase != "" && eventBase != ev) {
			eventBase = "-"
			break
		}
		eventBase = ev
		payloads[p] = true
	}
	if eventBase == "-" || (len(payloads) < 2 && n.actions[eventBase] > 1) {
		eventBase = "" // one action of several: named after the action
	}
	count := map[string]int{}
	var order, fallback []string
	for _, u := range uses {
		p := u.parent.find()
		if p.name == "" {
			continue
		}
		base := p.name
		switch {
		case eventBase != "":
			base = goName(eventBase)
		case p.body != "":
			base = strings.TrimSuffix(base, "Event")
		}
		part := "Variant"
		switch {
		case family != "":
			part = family
		case u.key == "" && weak != "":
			part = weak
		case u.key != "":
			part = keyName(u.key, u.elem)
		case u.hint != "":
			part = u.hint
		}
		c := joinName(base, part)
		if count[c] == 0 {
			order = append(order, c)
		}
		count[c]++
		// Fallbacks, should those be taken: without the stutter rule, then after
		// the user's own name rather than its event.
		for _, alt := range []string{base + part, joinName(strings.TrimSuffix(p.name, "Event"), part)} {
			if indexOf(fallback, alt) < 0 {
				fallback = append(fallback, alt)
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		if count[order[i]] != count[order[j]] {
			return count[order[i]] > count[order[j]]
		}
		return order[i] < order[j]
	})
	var out []string
	if len(order) > 1 {
		// Used at the same member of several types: the words they share at the end
		// ("LabelEditedChanges", "MilestoneEditedChanges" → "EditedChanges").
		if s := commonSuffix(order); len(nameWords(s)) >= 2 || (family != "" && s == family) {
			out = append(out, s)
		}
	}
	out = append(out, order...)
	out = append(out, fallback...)
	for _, f := range []string{family, weak} {
		if f != "" {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = append(out, "Type")
	}
	return out
}

// joinName appends a name part to a base, without stutter: "CodeScanningAlert" and
// "Alert" give "CodeScanningAlert", "Issue" and "IssueFieldValue" give
// "IssueFieldValue".
func joinName(base, part string) string {
	bw, pw := nameWords(base), nameWords(part)
	switch {
	case len(pw) <= len(bw) && strings.Join(bw[len(bw)-len(pw):], "") == part:
		return base
	case strings.HasPrefix(part, base) && len(pw) > len(bw) && strings.Join(pw[:len(bw)], "") == base:
		return part
	}
	return base + part
}

// bestVote returns the name with the most votes (ties: the shorter, then the
// first in order) and the total of all votes.
func bestVote(votes map[string]int) (string, int) {
	best, total := "", 0
	for name, v := range votes {
		total += v
		if best == "" || v > votes[best] || (v == votes[best] && (len(name) < len(best) || (len(name) == len(best) && name < best))) {
			best = name
		}
	}
	return best, total
}

// commonSuffix returns the longest run of whole words that every name ends with.
func commonSuffix(names []string) string {
	split := make([][]string, len(names))
	for i, s := range names {
		split[i] = nameWords(s)
	}
	var suffix []string
	for k := 1; ; k++ {
		var w string
		for i, ws := range split {
			if len(ws) < k {
				return strings.Join(suffix, "")
			}
			if i == 0 {
				w = ws[len(ws)-k]
			} else if ws[len(ws)-k] != w {
				return strings.Join(suffix, "")
			}
		}
		suffix = append([]string{w}, suffix...)
	}
}

// nameWords splits a Go name into its words, keeping initialisms whole
// ("HTMLURL" → "HTML", "URL" is not needed here: a run of capitals is one word).
func nameWords(s string) []string {
	var out []string
	rs := []rune(s)
	start := 0
	for i := 1; i < len(rs); i++ {
		if unicode.IsUpper(rs[i]) && !unicode.IsUpper(rs[i-1]) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// freeFor reports whether cl may take a name: no other class has it, and the lock
// does not keep it for another type (a locked name no class took this time goes
// to a class of its kind whose rules give it: the type it stood for, found
// elsewhere). A rename override into a name another type has is an error.
func (n *namer) freeFor(cl *class, name string) bool {
	if to, ok := n.renames[name]; ok {
		if other := n.taken[to]; other != nil && other != cl && n.err == nil {
			n.err = fmt.Errorf("%w: renames %s: %s is the name of another type", errOverride, name, to)
		}
		name = to
	}
	if n.taken[name] != nil {
		return false
	}
	if lt := n.lock.byName[name]; lt != nil && (n.locked[name] || lt.Kind != genKind(cl.kind)) {
		return false
	}
	return true
}

// claim gives cl a name, applying a rename override.
func (n *namer) claim(cl *class, name string) error {
	if to, ok := n.renames[name]; ok {
		n.renamed[name] = true
		name = to
	}
	if other := n.taken[name]; other != nil && other != cl {
		return fmt.Errorf("two types want the name %s", name)
	}
	if n.lock.byName[name] != nil {
		n.locked[name] = true
	}
	n.taken[name] = cl
	cl.name = name
	return nil
}

// claimFirst claims the first free candidate; a number is the last resort.
func (n *namer) claimFirst(cl *class, cands []string) error {
	for _, c := range cands {
		if c != "" && n.freeFor(cl, c) {
			return n.claim(cl, c)
		}
	}
	for i := 2; ; i++ {
		c := fmt.Sprintf("%s%d", cands[0], i)
		if n.freeFor(cl, c) {
			n.m.warn("type named by number: %s", c)
			return n.claim(cl, c)
		}
	}
}

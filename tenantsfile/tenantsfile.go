// Package tenantsfile reads the tenants file of `forgehooks serve --tenants`
// into a webhooks.StaticTenants, so that a program reads the very file the
// command does:
//
//	tenants:
//	  acme:
//	    secrets: ["acme-current-secret", "acme-previous-secret"]
//	    hooks: [12345]
//	    installation: 4242
//	  beta:
//	    secrets: [{env: BETA_SECRET}]
//	    token: {file: beta.token}
//	    api_url: https://forge.beta.example/api/v3
//	end: true
//
// Each tenant has a name (1 to webhooks.MaxTenantKeyLen printable ASCII
// bytes, no space nor slash), one to MaxSecrets secrets (the first the
// current one), and optionally hook ids (positive, each listed by one tenant
// only), an app installation id (positive), a token and an API URL (http or
// https, without user information): see webhooks.Tenant for what they mean.
// A secret or token is a reference: a literal string; "env:NAME" or
// {env: NAME}, an environment variable that is set and not empty; or
// "file:PATH" or {file: PATH}, a regular file's contents without their final
// line break, not empty, PATH relative to the tenants file's directory.
//
// The file ends with the line "end: true", which nothing may follow but
// blank lines and comments: a file caught half-written (by a reload while
// an editor or a deployment writes it) lacks it and is refused whole, rather
// than taken for a smaller set of tenants.
//
// Reading never blocks and never grows without bound: the file and every
// file a reference names are opened non-blocking and refused unless they
// are regular files (a FIFO put in their place fails at once), and their
// sizes are bounded (MaxFileBytes, MaxSecretFileBytes). MaxTenants tenants
// load in well under two seconds. An error says where (the line) and what
// is wrong, and never holds a character of a secret or a token.
package tenantsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"forgehooks.dev/forgehooks/webhooks"
)

// Bounds of a tenants file.
const (
	// MaxFileBytes bounds the tenants file.
	MaxFileBytes = 64 << 20
	// MaxTenants bounds the tenants of one file.
	MaxTenants = 100000
	// MaxSecrets bounds the secrets of one tenant.
	MaxSecrets = 16
	// MaxSecretFileBytes bounds a file a secret or token reference names.
	MaxSecretFileBytes = 64 << 10
)

// ErrNoEndMarker is wrapped by the error for a file whose last line is not
// "end: true": a file not written whole, or one written before the marker
// was required.
var ErrNoEndMarker = errors.New(`the file does not end with the line "end: true" (it ends every tenants file, so that one caught half-written is refused)`)

// Loader reads tenants files. The zero Loader reads the process's
// environment.
type Loader struct {
	// Getenv looks up the variables "env:" references name. Nil:
	// os.Getenv.
	Getenv func(string) string
}

// Load reads the tenants file at path with the process's environment:
// Loader{}.Load.
func Load(path string) (webhooks.StaticTenants, error) {
	return Loader{}.Load(path)
}

// Load reads the tenants file at path, and the files its references name
// (relative ones from path's directory). The error begins with path.
func (l Loader) Load(path string) (webhooks.StaticTenants, error) {
	data, err := readRegular(path, MaxFileBytes)
	if err != nil {
		return nil, err
	}
	ts, err := l.Parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// Parse reads a tenants file's contents; dir is where relative "file:"
// references start.
func (l Loader) Parse(data []byte, dir string) (webhooks.StaticTenants, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileBytes)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, errors.New("empty: want a 'tenants:' mapping, then the line \"end: true\"")
	}
	// A Node is decoded without yaml.v3's duplicate-key check, which takes
	// time quadratic in a mapping's size; p finds duplicates with maps.
	if !endsWithMarker(data) {
		return nil, ErrNoEndMarker
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, quietYAML(err)
	}
	if err := dec.Decode(new(yaml.Node)); !errors.Is(err, io.EOF) {
		return nil, errors.New("want one YAML document: a 'tenants:' mapping, then the line \"end: true\"")
	}
	getenv := l.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p := parser{getenv: getenv, dir: dir}
	return p.document(&doc)
}

// quoted matches what yaml.v3's syntax errors quote of the file (an
// anchor's name, say): it could be a mistyped secret.
var quoted = regexp.MustCompile(`'[^']*'`)

// quietYAML is a YAML syntax error without what it quotes of the file.
func quietYAML(err error) error {
	return errors.New(quoted.ReplaceAllString(err.Error(), "'…'"))
}

// endsWithMarker reports whether the last line that is neither blank nor a
// comment is "end: true".
func endsWithMarker(data []byte) bool {
	s := string(data)
	for s != "" {
		s = strings.TrimRight(s, " \t\r\n")
		i := strings.LastIndexByte(s, '\n')
		line := strings.TrimSpace(s[i+1:])
		if !strings.HasPrefix(line, "#") {
			return line == "end: true"
		}
		if i < 0 {
			return false
		}
		s = s[:i]
	}
	return false
}

// parser turns the decoded document into tenants.
type parser struct {
	getenv func(string) string
	dir    string
}

// at prefixes an error with n's line.
func at(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("line %d: "+format, append([]any{n.Line}, args...)...)
}

// kind names a node's kind for an error, never its value.
func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

// pairs returns a mapping's keys and values, refusing a key that is not a
// plain scalar or is given twice, and aliases, which this format has no
// use for (and which could make a small file large). The keys are not
// echoed in errors unless known: a mis-indented secret could be one.
func pairs(n *yaml.Node, what string) ([][2]*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		return nil, at(n, "%s: aliases are not allowed", what)
	}
	if n.Kind != yaml.MappingNode {
		return nil, at(n, "%s: want a mapping, not %s", what, kind(n))
	}
	out := make([][2]*yaml.Node, 0, len(n.Content)/2)
	// A few keys are compared with those before them; many, through a map.
	var seen map[string]int
	if len(n.Content) > 32 {
		seen = make(map[string]int, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, at(k, "%s: a key is %s, want a name", what, kind(k))
		}
		if v.Kind == yaml.AliasNode {
			return nil, at(v, "%s: aliases are not allowed", what)
		}
		first, dup := 0, false
		if seen != nil {
			first, dup = seen[k.Value]
			seen[k.Value] = k.Line
		} else {
			for _, kv := range out {
				if kv[0].Value == k.Value {
					first, dup = kv[0].Line, true
					break
				}
			}
		}
		if dup {
			return nil, at(k, "%s: a key given twice (first on line %d)", what, first)
		}
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out, nil
}

// document reads the document: "tenants" and then "end".
func (p *parser) document(doc *yaml.Node) (webhooks.StaticTenants, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("want one YAML document: a 'tenants:' mapping, then the line \"end: true\"")
	}
	top, err := pairs(doc.Content[0], "the file")
	if err != nil {
		return nil, err
	}
	var tenants *yaml.Node
	for i, kv := range top {
		switch k, v := kv[0], kv[1]; k.Value {
		case "tenants":
			tenants = v
		case "end":
			if i != len(top)-1 || v.Kind != yaml.ScalarNode || v.Value != "true" {
				return nil, at(k, "'end: true' is the file's last line")
			}
		default:
			return nil, at(k, "unknown key: want 'tenants' and 'end'")
		}
	}
	if tenants == nil {
		return nil, errors.New("no tenants: want a 'tenants:' mapping of names to their secrets")
	}
	list, err := pairs(tenants, "tenants")
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, at(tenants, "no tenants: want a 'tenants:' mapping of names to their secrets")
	}
	if len(list) > MaxTenants {
		return nil, fmt.Errorf("%d tenants: at most %d", len(list), MaxTenants)
	}
	out := make(webhooks.StaticTenants, len(list))
	hookOf := map[string]string{}
	for _, kv := range list {
		name := kv[0].Value
		if name == "" || !webhooks.ValidTenantName(name) {
			return nil, at(kv[0], "a tenant's name is 1 to %d printable ASCII characters, without spaces or slashes", webhooks.MaxTenantKeyLen)
		}
		st, err := p.tenant(name, kv[1], hookOf)
		if err != nil {
			return nil, err
		}
		out[name] = st
	}
	return out, nil
}

// tenant reads one tenant's mapping; hookOf holds the hook ids listed so
// far, and their tenants.
func (p *parser) tenant(name string, n *yaml.Node, hookOf map[string]string) (webhooks.StaticTenant, error) {
	var st webhooks.StaticTenant
	fields, err := pairs(n, "tenant "+name)
	if err != nil {
		return st, err
	}
	var secrets *yaml.Node
	for _, kv := range fields {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "secrets":
			secrets = v
			if v.Kind != yaml.SequenceNode {
				return st, at(v, "tenant %s: secrets: want a list, not %s", name, kind(v))
			}
			if len(v.Content) == 0 || len(v.Content) > MaxSecrets {
				return st, at(v, "tenant %s: %d secrets: want 1 to %d (the first the current one)", name, len(v.Content), MaxSecrets)
			}
			for i, ref := range v.Content {
				s, err := p.secret(ref)
				if err != nil {
					return st, at(ref, "tenant %s: secret %d: %w", name, i+1, err)
				}
				st.Secrets = append(st.Secrets, s)
			}
		case "hooks":
			if v.Kind != yaml.SequenceNode {
				return st, at(v, "tenant %s: hooks: want a list of hook ids, not %s", name, kind(v))
			}
			for _, h := range v.Content {
				id, ok := positive(h)
				if !ok {
					return st, at(h, "tenant %s: a hook id is a positive number", name)
				}
				s := strconv.FormatInt(id, 10)
				if other, ok := hookOf[s]; ok {
					return st, at(h, "hook %s is listed by two tenants, %s and %s", s, other, name)
				}
				hookOf[s] = name
				st.Hooks = append(st.Hooks, s)
			}
		case "installation":
			id, ok := positive(v)
			if !ok {
				return st, at(v, "tenant %s: installation: want an app installation's id, a positive number", name)
			}
			st.Installation = id
		case "token":
			tok, err := p.secret(v)
			if err != nil {
				return st, at(v, "tenant %s: token: %w", name, err)
			}
			if strings.ContainsAny(tok, "\r\n\x00") {
				return st, at(v, "tenant %s: token: holds a line break or NUL", name)
			}
			st.Token = tok
		case "api_url":
			u, err := apiURL(v)
			if err != nil {
				return st, at(v, "tenant %s: api_url: %w", name, err)
			}
			st.APIURL = u
		default:
			return st, at(k, "tenant %s: unknown key: want secrets, hooks, installation, token or api_url", name)
		}
	}
	if secrets == nil {
		return st, at(n, "tenant %s: 0 secrets: want 1 to %d (the first the current one)", name, MaxSecrets)
	}
	return st, nil
}

// positive reads a positive integer scalar.
func positive(n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		return 0, false
	}
	id, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	return id, err == nil && id > 0
}

// apiURL reads an API root: http or https, with a host, no user
// information (credentials go in token), no query nor fragment.
func apiURL(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return "", fmt.Errorf("want a URL, not %s", kind(n))
	}
	u, err := url.Parse(n.Value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("want http(s)://host[/path], such as https://forge.example.com/api/v3")
	}
	if u.User != nil {
		return "", errors.New("holds user information: put the credential in token")
	}
	return strings.TrimSuffix(n.Value, "/"), nil
}

// secret resolves a secret or token reference. The error never holds the
// value, nor any part of a literal.
func (p *parser) secret(n *yaml.Node) (string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "", errors.New("empty")
		}
		ref := n.Value
		switch {
		case strings.HasPrefix(ref, "env:"):
			return p.env(strings.TrimPrefix(ref, "env:"))
		case strings.HasPrefix(ref, "file:"):
			return p.file(strings.TrimPrefix(ref, "file:"))
		case ref == "":
			return "", errors.New("empty")
		}
		return ref, nil
	case yaml.MappingNode:
		kv, err := pairs(n, "a reference")
		if err != nil {
			return "", err
		}
		if len(kv) != 1 || kv[0][1].Kind != yaml.ScalarNode {
			return "", errors.New("a reference is {env: NAME} or {file: PATH}")
		}
		switch kv[0][0].Value {
		case "env":
			return p.env(kv[0][1].Value)
		case "file":
			return p.file(kv[0][1].Value)
		}
		return "", errors.New("a reference is {env: NAME} or {file: PATH}")
	}
	return "", fmt.Errorf("want a string or {env: NAME} or {file: PATH}, not %s", kind(n))
}

// env is the value of the variable name, set and not empty.
func (p *parser) env(name string) (string, error) {
	if name == "" {
		return "", errors.New("env: names no variable")
	}
	s := p.getenv(name)
	if s == "" {
		return "", fmt.Errorf("environment variable %s is unset or empty", name)
	}
	return s, nil
}

// file is the contents of the regular file at path (from p.dir when
// relative) without their final line break, not empty.
func (p *parser) file(path string) (string, error) {
	if path == "" {
		return "", errors.New("file: names no file")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	b, err := readRegular(path, MaxSecretFileBytes)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

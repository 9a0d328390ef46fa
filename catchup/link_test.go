package catchup

import (
	"maps"
	"strings"
	"testing"
)

func TestParseLinkHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header string
		want   map[string]string
		err    string
	}{
		{name: "empty", header: "", want: map[string]string{}},
		{name: "forge form", header: `<https://api.example/app/hook/deliveries?per_page=100&cursor=v1_12>; rel="next", <https://api.example/app/hook/deliveries?per_page=100>; rel="prev"`,
			want: map[string]string{"next": "https://api.example/app/hook/deliveries?per_page=100&cursor=v1_12", "prev": "https://api.example/app/hook/deliveries?per_page=100"}},
		{name: "unquoted rel, other params, spaces", header: ` <a?x=1,2>;title="a, b";rel=next ,<b>; rel="last"`, want: map[string]string{"next": "a?x=1,2", "last": "b"}},
		{name: "several rels, case", header: `<u>; REL="Next Last"`, want: map[string]string{"next": "u", "last": "u"}},
		{name: "first of a rel wins", header: `<a>; rel=next, <b>; rel=next`, want: map[string]string{"next": "a"}},
		{name: "no rel", header: `<a>; type="text/html"`, want: map[string]string{}},
		{name: "target not in brackets", header: `https://x; rel=next`, err: "want '<'"},
		{name: "unclosed bracket", header: `<https://x; rel=next`, err: "without closing '>'"},
		{name: "parameter without value", header: `<a>; rel`, err: "parameter without value"},
		{name: "unterminated quote", header: `<a>; rel="next`, err: "unterminated quoted value"},
		{name: "junk after target", header: `<a> rel=next`, err: "want ';' or ','"},
		{name: "too long", header: strings.Repeat("<a>; rel=x, ", 2000), err: "over the 16384-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLink(tt.header)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzParseLinkHeader: any header either parses into links whose targets are
// substrings of it, or is an error; it never panics or loops.
func FuzzParseLinkHeader(f *testing.F) {
	for _, s := range []string{``, `<a>; rel="next"`, `<a>;rel=next,<b>;rel=prev`, `<a`, `<a>; rel="`, `,,,;;<>`, `<a>; x=y; rel=next last`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		links, err := parseLink(h)
		if err != nil {
			if links != nil {
				t.Fatal("links with an error")
			}
			return
		}
		for rel, target := range links {
			if rel == "" || strings.ContainsAny(rel, " \t") {
				t.Fatalf("rel %q", rel)
			}
			if !strings.Contains(h, "<"+target+">") {
				t.Fatalf("target %q is not in the header", target)
			}
		}
	})
}

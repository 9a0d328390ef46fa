package goname

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// keep is s without the runes Words splits at: what the words together spell.
func keep(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, s)
}

// FuzzWords: Words and TitleWords split any string (invalid UTF-8 included)
// into non-empty words of letters and digits that spell, in order, exactly the
// letters and digits of the input; Join gives a name of letters and digits
// only, and spelling a word twice gives what spelling it once did.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"node_id", "pullRequest", "HTMLParser", "projects_v2_item", "+1", "", "ids", "URLS",
		"a\x00b", "\ufeffid", "\xff\xfe", "ǅemal", "İstanbul", "ß", "中文_name", "ﬁle", "Ⅻ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, split := range []struct {
			name  string
			words []string
		}{{"Words", Words(s)}, {"TitleWords", TitleWords(s)}} {
			for _, w := range split.words {
				if w == "" || keep(w) != w {
					t.Fatalf("%s(%q) has the word %q", split.name, s, w)
				}
			}
			if got, want := strings.Join(split.words, ""), keep(s); got != want {
				t.Fatalf("%s(%q) = %q spells %q, want %q", split.name, s, split.words, got, want)
			}
			name := Join(split.words)
			if !utf8.ValidString(name) || keep(name) != name {
				t.Fatalf("Join(%s(%q)) = %q: not letters and digits only", split.name, s, name)
			}
			for _, w := range split.words {
				if once := Word(w); Word(once) != once {
					t.Fatalf("Word(%q) = %q, but Word(%q) = %q", w, once, once, Word(once))
				}
			}
		}
	})
}

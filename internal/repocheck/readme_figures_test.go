package repocheck

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// figure is a measured figure as the READMEs write one: a ratio (1.88×) or
// a duration in ns, µs or ms.
var figure = regexp.MustCompile(`(?:^|[^0-9.])([0-9]+(?:\.[0-9]+)?(?:×| ?(?:ns|µs|ms)\b))`)

// benchSections are the commands bench/README.md lists and the part of it
// each one writes (between <!-- name:begin --> and <!-- name:end -->).
var benchSections = map[string]string{
	"make bench-peers": "benchtable",
	"make bench-load":  "load",
}

// TestReadmeFiguresFromBench: every figure in README.md is quoted from
// bench/README.md: the sentence (or the part of it up to a semicolon)
// names the command that measured it, and the figure occurs in the tables
// that command writes there.
func TestReadmeFiguresFromBench(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	bench, err := os.ReadFile("../../bench/README.md")
	if err != nil {
		t.Fatal(err)
	}
	checked, problems, err := figureProblems(string(readme), string(bench))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if checked == 0 {
		t.Error("no figure found in README.md: the pattern no longer matches how it writes them")
	}
}

// figureProblems checks the figures of readme against bench: it returns
// how many it checked and what is wrong with them.
func figureProblems(readme, bench string) (checked int, problems []string, err error) {
	sections := map[string]string{}
	for cmd, name := range benchSections {
		if !strings.Contains(bench, "| `"+cmd) {
			return 0, nil, fmt.Errorf("bench/README.md's table of commands no longer lists `%s`", cmd)
		}
		_, rest, ok1 := strings.Cut(bench, "<!-- "+name+":begin -->")
		section, _, ok2 := strings.Cut(rest, "<!-- "+name+":end -->")
		if !ok1 || !ok2 {
			return 0, nil, fmt.Errorf("bench/README.md has no section %s (the output of %s)", name, cmd)
		}
		sections[cmd] = section
	}
	for _, sentence := range sentences(readme) {
		for _, m := range figure.FindAllStringSubmatch(sentence, -1) {
			fig := m[1]
			checked++
			var cmds []string
			for cmd := range benchSections {
				if strings.Contains(sentence, "`"+cmd+"`") {
					cmds = append(cmds, cmd)
				}
			}
			if len(cmds) == 0 {
				problems = append(problems, fmt.Sprintf("README.md quotes %s without the command that measured it (`make bench-peers` or `make bench-load` in the same sentence):\n%s", fig, sentence))
				continue
			}
			found := false
			for _, cmd := range cmds {
				found = found || occurs(sections[cmd], fig)
			}
			if !found {
				problems = append(problems, fmt.Sprintf("README.md's %s is in none of the tables that %q writes in bench/README.md:\n%s", fig, cmds, sentence))
			}
		}
	}
	return checked, problems, nil
}

// TestFigureProblems: what the check refuses.
func TestFigureProblems(t *testing.T) {
	const bench = "| `make bench-peers` | x |\n| `make bench-load` | y |\n" +
		"<!-- benchtable:begin -->\n| raw | 1.88× |\n<!-- benchtable:end -->\n" +
		"<!-- load:begin -->\n| typed | 0.50× | 10.40× |\n<!-- load:end -->\nelsewhere 0.40×\n"
	tests := []struct {
		name, readme string
		want         []string // in the problems, in order
	}{
		{"quoted", "Raw costs 1.88× (`make bench-peers`); typed 0.50× go-github (`make bench-load`).", nil},
		{"no command", "Typed uses 0.50× go-github.", []string{"without the command"}},
		{"another command's table", "Typed uses 0.50× go-github (`make bench-peers`).", []string{"in none of the tables"}},
		{"not in the table", "Typed uses 0.40× go-github (`make bench-load`).", []string{"in none of the tables"}},
		{"a duration", "It ran again 121 ms after (`make bench-load`).", []string{"121 ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, problems, err := figureProblems(tt.readme, bench)
			if err != nil || n == 0 {
				t.Fatalf("checked %d, %v", n, err)
			}
			if len(problems) != len(tt.want) {
				t.Fatalf("problems %q, want %d", problems, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %q, want it to say %q", problems[i], w)
				}
			}
		})
	}
	if _, _, err := figureProblems("x", "no table"); err == nil {
		t.Error("a bench/README.md without its command table passed")
	}
}

// sentences splits text at semicolons and sentence ends, with its lines
// joined.
func sentences(text string) []string {
	text = strings.Join(strings.Fields(text), " ")
	return regexp.MustCompile(`; |\. `).Split(text, -1)
}

// occurs reports whether fig occurs in s as a whole figure (not the tail of
// a longer number).
func occurs(s, fig string) bool {
	for _, m := range figure.FindAllStringSubmatch(s, -1) {
		if m[1] == fig {
			return true
		}
	}
	return false
}

// TestFigurePattern: what the check counts as a figure, and what it does
// not.
func TestFigurePattern(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"costs 1.88× one HMAC", []string{"1.88×"}},
		{"0.50× go-github, 0.59× Node.js", []string{"0.50×", "0.59×"}},
		{"ran again 121 ms after", []string{"121 ms"}},
		{"19.6 µs per op, 7ns", []string{"19.6 µs", "7ns"}},
		{"MaxBodyBytes (25 MiB), 4 × the CPUs, 10 s", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, m := range figure.FindAllStringSubmatch(tt.text, -1) {
			got = append(got, m[1])
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%q: figures %q, want %q", tt.text, got, tt.want)
		}
	}
	if occurs("rounds 0.47–0.51×, 10.50×", "0.50×") {
		t.Error("0.50× found inside 10.50×")
	}
}

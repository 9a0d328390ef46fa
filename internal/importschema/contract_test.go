package importschema

import (
	"bufio"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	genmodel "forgehooks.dev/forgehooks/gen/model"
)

var update = flag.Bool("update", false, "rewrite the golden and contract files from what the code now produces")

// originalSpec is a copy of the behaviour contract this project keeps, so that
// the contract file is checked against its source in every clone.
var originalSpec = filepath.Join("testdata", "contract", "behaviour-contract.md")

const contractPath = "../../schema/" + genmodel.ContractFile

const contractHeader = `# The names (events and event.action) of the events table of the behaviour
# contract: genmodel.Load fails when the schema lacks any of them. Derived from it by
# internal/importschema's TestContractNames (go test -update).
`

var (
	eventsHeading = regexp.MustCompile(`^#{2,4}\s+Supported events and their actions\s*$`)
	tableRow      = regexp.MustCompile("^\\|\\s*`([a-z0-9_]+)`\\s*\\|(.*)\\|\\s*$")
	actionCell    = regexp.MustCompile("`([^`\\s]+)`")
)

// contractNames parses the events table of the behaviour contract: each event, then its
// event.action names, in the table's order.
func contractNames(md string) ([]string, error) {
	sc := bufio.NewScanner(strings.NewReader(md))
	in, rows := false, false
	var names []string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case eventsHeading.MatchString(line):
			in = true
		case !in:
		case strings.HasPrefix(line, "#"):
			in = false // the next section
		case strings.HasPrefix(line, "|"):
			m := tableRow.FindStringSubmatch(line)
			if m == nil {
				continue // the header and its rule
			}
			rows = true
			names = append(names, m[1])
			for _, a := range actionCell.FindAllStringSubmatch(m[2], -1) {
				names = append(names, m[1]+"."+a[1])
			}
		case rows && line != "":
			in = false
		}
	}
	if len(names) == 0 {
		return nil, errors.New("no events table found")
	}
	return names, nil
}

func TestContractNames(t *testing.T) {
	md, err := os.ReadFile(originalSpec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := contractNames(string(md))
	if err != nil {
		t.Fatal(err)
	}
	// 62 events and 202 actions: the table's count (the "256" undercounts).
	if len(want) != 264 {
		t.Errorf("the behaviour contract's table gives %d names, not 264: has the table changed?", len(want))
	}
	if *update {
		text := contractHeader + strings.Join(want, "\n") + "\n"
		if err := os.WriteFile(contractPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := readNames(contractPath)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s differs from the behaviour contract's table (-spec +file), run go test -update:\n%s", contractPath, d)
	}
}

func readNames(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, nil
}

func TestContractNamesParser(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want []string
		err  bool
	}{
		{
			name: "table",
			md: "# X\n### Supported events and their actions\n\nText.\n\n| Event | Actions |\n|---|---|\n" +
				"| `a` | `x`, `y` |\n| `b` | |\n\n## Errors\n| `c` | `z` |\n",
			want: []string{"a", "a.x", "a.y", "b"},
		},
		{
			name: "table ends at text",
			md:   "### Supported events and their actions\n| `a` | `x` |\nafter\n| `b` | |\n",
			want: []string{"a", "a.x"},
		},
		{name: "no table", md: "### Supported events and their actions\nnothing\n", err: true},
		{name: "no heading", md: "| `a` | `x` |\n", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := contractNames(tc.md)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

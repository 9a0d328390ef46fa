package webhooks_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeQuickStart checks that the README's quick start is Example_quickStart:
// the lines between its quickstart markers, followed by the line that serves.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_quickstart_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	begin := strings.Index(s, "// quickstart:begin\n")
	end := strings.Index(s, "\t// quickstart:end")
	if begin < 0 || end < begin {
		t.Fatal("quickstart markers not found in example_quickstart_test.go")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(s[begin+len("// quickstart:begin\n"):end], "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	want.WriteString(`log.Fatal(http.ListenAndServe("127.0.0.1:3000", mw))` + "\n```")
	if !strings.Contains(string(readme), "\n"+want.String()) {
		t.Errorf("README.md's quick start is out of step with Example_quickStart; it must contain, ending its code block:\n%s", want.String())
	}
}

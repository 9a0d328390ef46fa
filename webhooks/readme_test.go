package webhooks_test

import (
	"os"
	"strings"
	"testing"
)

// readmeServe is what the README's quick start has where Example_quickStart
// serves on a free port and posts a delivery: it serves on srv.Addr until
// SIGINT or SIGTERM.
const readmeServe = `go func() {
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}()
stop := make(chan os.Signal, 1)
signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
<-stop
`

// TestReadmeQuickStart checks that the README's quick start is
// Example_quickStart: its setup (quickstart:begin to quickstart:serve), then
// readmeServe, then its shutdown (quickstart:shutdown to quickstart:end),
// ending a code block.
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
	section := func(from, to string) string {
		begin := strings.Index(s, "\t// quickstart:"+from+"\n")
		end := strings.Index(s, "\t// quickstart:"+to+"\n")
		if begin < 0 || end < begin {
			t.Fatalf("markers quickstart:%s and quickstart:%s not found in example_quickstart_test.go", from, to)
		}
		var out strings.Builder
		for _, line := range strings.SplitAfter(s[begin+len("\t// quickstart:"+from+"\n"):end], "\n") {
			out.WriteString(strings.TrimPrefix(line, "\t"))
		}
		return out.String()
	}
	want := section("begin", "serve") + readmeServe + section("shutdown", "end") + "```"
	if !strings.Contains(string(readme), "\n"+want) {
		t.Errorf("README.md's quick start is out of step with Example_quickStart; it must contain, ending its code block:\n%s", want)
	}
}

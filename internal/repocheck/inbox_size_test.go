package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The inbox package keeps durable intake, queries and the admin socket; the
// runner, the records and the rest live in inbox/internal. These bounds keep
// it that way.
const (
	inboxMaxLines  = 4000 // hand-written lines of inbox/*.go, tests excluded
	inboxMaxFields = 15   // fields of a struct there, options structs excepted
)

// TestInboxSize: inbox/ (its own files, not inbox/internal, no tests) holds
// at most inboxMaxLines lines and no struct with more than inboxMaxFields
// fields but Options, and embeds neither *Inbox nor a runner.
func TestInboxSize(t *testing.T) {
	files, err := filepath.Glob("../../inbox/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inbox files: %v", err)
	}
	lines := 0
	fs := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(src), "\n")
		af, err := parser.ParseFile(fs, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			fields := 0
			for _, fl := range st.Fields.List {
				fields += max(len(fl.Names), 1)
				if len(fl.Names) == 0 {
					if s, ok := fl.Type.(*ast.StarExpr); ok {
						if id, ok := s.X.(*ast.Ident); ok && id.Name == "Inbox" {
							t.Errorf("%s: %s embeds *Inbox", f, ts.Name.Name)
						}
					}
				}
			}
			if fields > inboxMaxFields && !strings.HasSuffix(ts.Name.Name, "Options") {
				t.Errorf("%s: struct %s has %d fields, more than %d", f, ts.Name.Name, fields, inboxMaxFields)
			}
			return true
		})
	}
	if lines > inboxMaxLines {
		t.Errorf("inbox/ holds %d hand-written lines, more than %d: move what is not intake, queries or the admin socket to inbox/internal", lines, inboxMaxLines)
	}
	t.Logf("inbox/: %d hand-written lines", lines)
}

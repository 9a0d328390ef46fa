package repocheck

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxTracked is the largest file git may track outside schema/source and
// testdata: source and documentation stay far below it; a build output or
// a data dump does not.
const maxTracked = 2 << 20

// TestNoBuildOutputTracked: git tracks no compiled program (ELF, Mach-O,
// PE, or a file with the executable bit that is not a #! script) and no file
// over 2 MiB outside schema/source and testdata.
func TestNoBuildOutputTracked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: not a checkout to check")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git work tree: %v", err)
	}
	root := strings.TrimSpace(string(top))
	out, err := exec.Command("git", "-C", root, "ls-files", "-s", "-z").Output()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, entry := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		// <mode> <object> <stage>\t<path>
		meta, path, ok := strings.Cut(entry, "\t")
		if !ok {
			t.Fatalf("git ls-files -s: %q", entry)
		}
		mode := strings.Fields(meta)[0]
		if mode == "120000" || mode == "160000" {
			continue // a link, a submodule
		}
		n++
		if p := trackedProblem(filepath.Join(root, filepath.FromSlash(path)), path, mode == "100755"); p != "" {
			t.Error(p)
		}
	}
	if n < 100 {
		t.Errorf("git ls-files listed %d files: not this repository?", n)
	}
}

// trackedProblem says what is wrong with the tracked file at path (name,
// relative to the repository's root); "" when nothing is. A file missing
// from the work tree (deleted, not yet committed) is not checked.
func trackedProblem(path, name string, executable bool) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	head := make([]byte, 4)
	k, _ := io.ReadFull(f, head)
	head = head[:k]
	if kind := program(head); kind != "" {
		return fmt.Sprintf("%s is a compiled program (%s): build output is not tracked (.gitignore it)", name, kind)
	}
	if executable && !bytes.HasPrefix(head, []byte("#!")) {
		return fmt.Sprintf("%s is executable and not a #! script: build output is not tracked", name)
	}
	if fi.Size() > maxTracked && !largeAllowed(name) {
		return fmt.Sprintf("%s is %d bytes, over %d outside schema/source and testdata", name, fi.Size(), maxTracked)
	}
	return ""
}

// program names the executable format whose magic number head starts with;
// "" when it is none.
func program(head []byte) string {
	for _, m := range []struct {
		magic []byte
		kind  string
	}{
		{[]byte("\x7fELF"), "ELF"},
		{[]byte{0xcf, 0xfa, 0xed, 0xfe}, "Mach-O"},
		{[]byte{0xce, 0xfa, 0xed, 0xfe}, "Mach-O"},
		{[]byte{0xca, 0xfe, 0xba, 0xbe}, "Mach-O universal"},
		{[]byte("MZ"), "PE"},
	} {
		if bytes.HasPrefix(head, m.magic) {
			return m.kind
		}
	}
	return ""
}

// largeAllowed reports whether the tracked file name may be over
// maxTracked: the forge's published descriptions and test data.
func largeAllowed(name string) bool {
	return strings.HasPrefix(name, "schema/source/") || strings.Contains("/"+name, "/testdata/")
}

// TestTrackedProblem: what the check refuses and what it lets be.
func TestTrackedProblem(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := bytes.Repeat([]byte("x"), maxTracked+1)
	tests := []struct {
		name       string
		data       []byte
		executable bool
		want       string // in the problem; "" for none
	}{
		{"examples/lambda/lambda", []byte("\x7fELF\x02\x01\x01"), true, "compiled program (ELF)"},
		{"tool.exe", []byte("MZ\x90\x00"), false, "compiled program (PE)"},
		{"bin/tool", []byte{0xcf, 0xfa, 0xed, 0xfe, 7}, false, "compiled program (Mach-O)"},
		{"run.sh", []byte("#!/usr/bin/env bash\necho hi\n"), true, ""},
		{"data.bin", []byte{1, 2, 3, 4}, true, "executable and not a #! script"},
		{"dump.json", big, false, "over 2097152"},
		{"schema/source/api.json", big, false, ""},
		{"inbox/testdata/big.json", big, false, ""},
		{"README.md", []byte("# x\n"), false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := trackedProblem(write(strings.ReplaceAll(tt.name, "/", "_"), tt.data), tt.name, tt.executable)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("problem %q, want %q", got, tt.want)
			}
		})
	}
}

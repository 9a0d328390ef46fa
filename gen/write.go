package gen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Write puts files in dir (a File's Name is a slash-separated path relative to
// it) and removes the generated files of an earlier run that files no longer
// has (those whose first line is Header's comment) from dir, the directories
// files are in, and those under dir/internal, so that a type or event dropped
// from the schema leaves nothing behind; a directory left empty is removed.
// Hand-written files are never touched. A file whose content is unchanged is
// not rewritten.
func Write(dir string, files []File) error {
	keep := make(map[string]bool, len(files))
	dirs := map[string]bool{dir: true}
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		keep[path] = true
		dirs[filepath.Dir(path)] = true
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("gen.Write: %w", err)
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			return fmt.Errorf("gen.Write: %w", err)
		}
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "internal")); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				dirs[filepath.Join(dir, "internal", e.Name())] = true
			}
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	for _, d := range sorted {
		if err := removeStale(d, keep); err != nil {
			return fmt.Errorf("gen.Write: %w", err)
		}
		if d != dir {
			if entries, err := os.ReadDir(d); err == nil && len(entries) == 0 {
				if err := os.Remove(d); err != nil {
					return fmt.Errorf("gen.Write: %w", err)
				}
			}
		}
	}
	return nil
}

// removeStale removes the generated .go files in dir that keep does not hold.
func removeStale(dir string, keep map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() || keep[path] || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		generated, err := isGenerated(path)
		if err != nil {
			return err
		}
		if generated {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	return nil
}

func isGenerated(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	return strings.TrimSpace(line) == "// "+Header, nil
}

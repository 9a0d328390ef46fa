package gen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Write puts files in dir and removes the generated files of an earlier run that
// files no longer has (those whose first line is Header's comment), so that a
// type or event dropped from the schema leaves nothing behind. Hand-written files
// are never touched. A file whose content is unchanged is not rewritten.
func Write(dir string, files []File) error {
	keep := make(map[string]bool, len(files))
	for _, f := range files {
		keep[f.Name] = true
		path := filepath.Join(dir, f.Name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			return fmt.Errorf("gen.Write: %w", err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("gen.Write: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || keep[e.Name()] || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		generated, err := isGenerated(path)
		if err != nil {
			return fmt.Errorf("gen.Write: %w", err)
		}
		if generated {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("gen.Write: %w", err)
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

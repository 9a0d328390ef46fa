package main

import (
	"os"
	"regexp"
	"testing"
)

// The package comment lists every command, those registered in init
// functions of their own files included.
func TestPackageDocListsEveryCommand(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range commands {
		if !regexp.MustCompile(`(?m)^//\tforgehooks ` + cmd.name + ` `).Match(src) {
			t.Errorf("main.go's package comment does not list forgehooks %s", cmd.name)
		}
	}
}

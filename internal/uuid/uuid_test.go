package uuid

import (
	"regexp"
	"testing"
)

// TestNew: the canonical form with the version and variant bits of a random
// UUID, and no two alike over a few hundred.
func TestNew(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 500 {
		id := New()
		if !form.MatchString(id) {
			t.Fatalf("New() = %q, not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("New() gave %q twice", id)
		}
		seen[id] = true
	}
}

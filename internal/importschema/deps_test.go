package importschema

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsModelNotGenerator: the importer depends on the generator's
// model (gen/model), never on the generator (gen) and its emitters.
func TestImportsModelNotGenerator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	var model bool
	for _, d := range deps {
		switch d {
		case "forgehooks.dev/forgehooks/gen", "github.com/dave/jennifer/jen":
			t.Errorf("the importer depends on %s", d)
		case "forgehooks.dev/forgehooks/gen/model":
			model = true
		}
	}
	if !model {
		t.Error("the importer does not depend on gen/model: the test looks at the wrong list")
	}
}

// Command importschema turns the forge's published webhook spec (the npm package
// @octokit/openapi-webhooks) into the YAML schema of schema/, and reports what an
// update changed. The logic is in internal/importschema; its package doc and
// schema/README.md describe the flow and the flags. This main gives it the
// generator's declarations (gen.Declarations), so that the change report
// names every Go declaration an update removes, with its package.
//
//	go run ./cmd/importschema -q                    # re-import the pinned spec
//	make schema VERSION=12.1.0                      # fetch another version, import, report
package main

import (
	"os"

	"forgehooks.dev/forgehooks/gen"
	genmodel "forgehooks.dev/forgehooks/gen/model"
	"forgehooks.dev/forgehooks/internal/importschema"
)

func main() {
	os.Exit(importschema.RunWith(os.Args[1:], os.Stderr, importschema.Options{Declarations: declarations}))
}

// declarations lists the exported declarations gen makes of s, as strings.
func declarations(s *genmodel.Schema) ([]string, error) {
	decls, err := gen.Declarations(s, gen.DefaultOptions)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(decls))
	for i, d := range decls {
		out[i] = d.String()
	}
	return out, nil
}

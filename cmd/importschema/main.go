// Command importschema turns the forge's published webhook spec (the npm package
// @octokit/openapi-webhooks) into the YAML schema of schema/, and reports what an
// update changed. The logic is in internal/importschema; its package doc and
// schema/README.md describe the flow and the flags.
//
//	go run ./cmd/importschema -q                    # re-import the pinned spec
//	make schema VERSION=12.1.0                      # fetch another version, import, report
package main

import (
	"os"

	"forgehooks.dev/forgehooks/internal/importschema"
)

func main() {
	os.Exit(importschema.Run(os.Args[1:], os.Stderr))
}

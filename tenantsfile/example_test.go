package tenantsfile_test

import (
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"

	"forgehooks.dev/forgehooks/tenantsfile"
	"forgehooks.dev/forgehooks/webhooks"
)

// A program that serves the tenants of the file `forgehooks serve --tenants`
// reads.
func Example() {
	dir, _ := os.MkdirTemp("", "tenants")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tenants.yaml")
	os.WriteFile(path, []byte(`tenants:
  acme:
    secrets: ["acme-current-secret-01"]
    installation: 4242
  beta:
    secrets: ["beta-current-secret-01"]
    token: {env: BETA_TOKEN}
    api_url: https://forge.beta.example/api/v3
end: true
`), 0o600)
	os.Setenv("BETA_TOKEN", "beta-token")

	tenants, err := tenantsfile.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	wh, err := webhooks.New(webhooks.Options{Tenants: webhooks.NewTenants(tenants, webhooks.TenantsOptions{})})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /t/{tenant}/hooks", webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{}).AnyPath())
	fmt.Println(len(tenants), tenants["acme"].Installation, tenants["beta"].APIURL)
	// Output: 2 4242 https://forge.beta.example/api/v3
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/internal/importschema"
)

// TestDowngradeReportNamesDeclarations: the change report of the real
// 12.1.0 → 12.0.3 downgrade names the Go declarations that go, with their
// package: the registration helpers of the removed event and actions, the
// getters and fields of the removed members, the enum constants.
func TestDowngradeReportNamesDeclarations(t *testing.T) {
	if testing.Short() {
		t.Skip("imports two whole specs")
	}
	specs := "../../internal/importschema/testdata/specs"
	report := filepath.Join(t.TempDir(), "report.md")
	var stderr bytes.Buffer
	code := importschema.RunWith([]string{"-compare", "-overrides", "../../schema/overrides.yaml", "-report", report, "-q",
		filepath.Join(specs, "api.github.com-12.1.0.json.gz"), filepath.Join(specs, "api.github.com-12.0.3.json.gz")},
		&stderr, importschema.Options{Declarations: declarations})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{
		"### Go declarations that go",
		"`forgehooks.dev/forgehooks/payloads.OnIssueDependenciesEvent (func)`",
		"`forgehooks.dev/forgehooks/payloads.OnSecretScanningAlertAssignedEvent (func)`",
		"`forgehooks.dev/forgehooks/payloads/internal/common.AppPermissions.GetAttestations (method)`",
		"`forgehooks.dev/forgehooks/payloads/internal/common.AppPermissions.Attestations (field)`",
		"`forgehooks.dev/forgehooks/payloads.AppPermissionsCopilotRequestsWrite (const)`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s", md)
	}
}

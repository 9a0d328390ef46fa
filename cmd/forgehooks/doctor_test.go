package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/forgetest"
)

// doctor against the fake forge: an app subscribed to issues without the
// checks permission can receive issues.opened and never check_run.completed
// (exit 1); usage errors exit 2; an app the forge refuses, 1.
func TestDoctor(t *testing.T) {
	t.Parallel()
	forge := forgetest.New(t, forgetest.Options{App: forgetest.AppInfo{
		Events:      []string{"issues"},
		Permissions: map[string]string{"issues": "write", "metadata": "read"},
	}})
	key := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(key, forgetest.PrivateKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"doctor", "--app-id", forge.AppID(), "--private-key", key, "--api-url", forge.URL}
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"one never arrives", append(flags, "issues.opened", "check_run.completed"), exitFailure,
			[]string{"ok  issues.opened (issues: write)\n", "NO  check_run.completed: the app lacks the checks permission"}, "1 of 2 names can never arrive"},
		{"all arrive", append(flags, "issues.opened", "issues", "ping"), exitOK,
			[]string{"ok  issues.opened", "ok  issues (issues: write)", "ok  ping"}, ""},
		{"no names", flags, exitUsage, nil, "give the names to check"},
		{"no key", []string{"doctor", "--app-id", "1", "push"}, exitUsage, nil, "--private-key are required"},
		{"refused", []string{"doctor", "--app-id", "7", "--private-key", key, "--api-url", forge.URL, "push"}, exitFailure, nil, "401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", nil, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout %q, want %q", stdout, s)
				}
			}
		})
	}
}

package lambda_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// userMain is a user's function: a main package of a module of its own
// that imports package lambda and registers one handler, as the package
// documentation shows. An issue titled "fail" fails its handler.
const userMain = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"log/slog"
	"os"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/lambda"
	"forgehooks.dev/forgehooks/webhooks"
)

func main() {
	wh, err := webhooks.New(webhooks.Options{Secret: os.Getenv("FORGE_WEBHOOK_SECRET")})
	if err != nil {
		log.Fatal(err)
	}
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error {
		var p struct {
			Issue struct {
				Title string ` + "`json:\"title\"`" + `
			} ` + "`json:\"issue\"`" + `
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			return err
		}
		if p.Issue.Title == "fail" {
			return errors.New("the issue asked to fail")
		}
		slog.InfoContext(ctx, "issue opened", "delivery", e.ID, "title", p.Issue.Title)
		return nil
	})
	co, err := lambda.CatchupFromEnv(os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	lambda.New(wh, lambda.Options{Catchup: co}).Start()
}
`

// TestBootstrap builds a user's module as the deploy recipe does (go build
// -tags lambda.norpc -o bootstrap, for this machine's GOOS and GOARCH so that
// it runs here), starts bootstrap as the custom runtime would, with
// AWS_LAMBDA_RUNTIME_API pointing at a fake of the Runtime API, and has it
// answer signed deliveries.
func TestBootstrap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf(`module example.com/triage

go 1.26.0

require (
	forgehooks.dev/forgehooks v0.0.0
	forgehooks.dev/forgehooks/lambda v0.0.0
)

replace (
	forgehooks.dev/forgehooks => %s
	forgehooks.dev/forgehooks/lambda => %s
)
`, root, filepath.Join(root, "lambda"))
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(userMain)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	goRun := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, goCmd, args...)
		cmd.Dir = dir
		// The user's module alone, built as the recipe builds (no cgo),
		// whatever the test itself runs under.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0", "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// What a user runs: tidy adds aws-lambda-go, which package lambda brings.
	goRun("mod", "tidy")
	goRun("build", "-tags", "lambda.norpc", "-o", "bootstrap", ".")
	bootstrap := filepath.Join(dir, "bootstrap")
	out, err := exec.Command(goCmd, "version", "-m", bootstrap).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-tags=lambda.norpc") {
		t.Fatalf("go version -m bootstrap: %v; want it built with -tags=lambda.norpc:\n%s", err, out)
	}

	rt := newRuntimeAPI(t, "")
	cmd := exec.Command(bootstrap)
	cmd.Dir = dir
	// The custom runtime's environment, less what the function does not read.
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + rt.addr(), "FORGE_WEBHOOK_SECRET=" + secret, "_HANDLER=bootstrap",
		"LAMBDA_TASK_ROOT=" + dir, "AWS_LAMBDA_FUNCTION_NAME=triage", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128", "AWS_REGION=us-east-1", "TZ=:UTC"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("bootstrap's stderr:\n%s", stderr.String())
		}
	})

	opened := []byte(`{"action":"opened","issue":{"number":7,"title":"crash on start"}}`)
	failing := []byte(`{"action":"opened","issue":{"number":8,"title":"fail"}}`)
	tests := []struct {
		name, signature string
		body            []byte
		status          int
		kind            string // "response" or "error"
	}{
		{"signed delivery", sign(t, secret, opened), opened, 200, "response"},
		{"wrong secret", sign(t, "not-the-function-secret-0123", opened), opened, 400, "response"},
		{"the handler fails", sign(t, secret, failing), failing, 500, "response"},
	}
	for _, tt := range tests {
		id := newID()
		res := rt.invoke(t, []byte(fmt.Sprintf(functionURLEvent, "issues", id, tt.signature, base64.StdEncoding.EncodeToString(tt.body))))
		if res.status != tt.kind {
			t.Fatalf("%s: invocation %s: %s", tt.name, res.status, res.body)
		}
		var hr httpResponse
		if err := json.Unmarshal(res.body, &hr); err != nil {
			t.Fatalf("%s: %v: %s", tt.name, err, res.body)
		}
		if hr.StatusCode != tt.status {
			t.Fatalf("%s: status %d (%s), want %d", tt.name, hr.StatusCode, hr.Body, tt.status)
		}
	}
	// No catch-up configured: a scheduled event is an invocation error,
	// which the platform logs.
	if res := rt.invoke(t, []byte(scheduledEvent)); res.status != "error" || !strings.Contains(string(res.body), "catch-up is not configured") {
		t.Fatalf("scheduled event: %s: %s", res.status, res.body)
	}
}

package inspector_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/internal/syncbuf"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

const testSecret = "inspector-test-secret"

// harness is a receiver with an inspector, both over real HTTP on
// 127.0.0.1. Its handler logs a line per run ("handler ran", with the
// attempt), and panics on issues.closed while failing is set.
type harness struct {
	wh      *webhooks.Webhooks
	insp    *inspector.Inspector
	hookURL string
	uiURL   string
	logs    *syncBuffer
	failing atomic.Bool
}

// syncBuffer is a buffer safe for a server writing while a test reads.
type syncBuffer = syncbuf.Buffer

func newHarness(t testing.TB, opts inspector.Options) *harness {
	t.Helper()
	h := &harness{logs: &syncBuffer{}}
	log := slog.New(slog.NewTextHandler(h.logs, nil))
	wh, err := webhooks.New(webhooks.Options{Secret: testSecret, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	h.wh = wh
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		info, _ := webhooks.DeliveryFrom(ctx)
		log.Info("handler ran", "id", e.ID, "event", e.Name, "action", e.Action(), "attempt", info.Attempt)
		if e.Name == "issues" && e.Action() == "closed" && h.failing.Load() {
			panic("handler exploded on a closed issue")
		}
		return nil
	})
	opts.Webhooks = wh
	if opts.Logger == nil {
		opts.Logger = log
	}
	hook := httptest.NewUnstartedServer(nil)
	opts.WebhookURL = "http://" + hook.Listener.Addr().String() + webhooks.DefaultPath
	h.insp = inspector.New(opts)
	hook.Config.Handler = webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: h.insp.OnResult, Logger: log})
	hook.Start()
	ui := httptest.NewServer(h.insp)
	t.Cleanup(func() {
		h.insp.Close()
		ui.Close()
		hook.Close()
		wh.Close(context.Background())
	})
	h.hookURL = opts.WebhookURL
	h.uiURL = ui.URL + "/"
	return h
}

// post sends body as the forge does (the request `forgehooks send` makes),
// signed with secret, and returns the status.
func (h *harness) post(t testing.TB, event, id string, body []byte, secret string) int {
	t.Helper()
	sig, err := signing.Sign(secret, body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, h.hookURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, event)
	req.Header.Set(webhooks.HeaderDelivery, id)
	req.Header.Set(webhooks.HeaderSignature, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// cli is the forgehooks binary, built once for the package's tests.
var cli struct {
	once sync.Once
	path string
	err  error
	dir  string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cli.dir != "" {
		os.RemoveAll(cli.dir)
	}
	os.Exit(code)
}

func forgehooksBinary(t testing.TB) string {
	t.Helper()
	cli.once.Do(func() {
		cli.dir, cli.err = os.MkdirTemp("", "inspector-cli-")
		if cli.err != nil {
			return
		}
		cli.path = filepath.Join(cli.dir, "forgehooks")
		out, err := exec.Command("go", "build", "-o", cli.path, "forgehooks.dev/forgehooks/cmd/forgehooks").CombinedOutput()
		if err != nil {
			cli.err = fmt.Errorf("go build ./cmd/forgehooks: %v\n%s", err, out)
		}
	})
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	return cli.path
}

// send runs `forgehooks send` against the harness and returns its output.
func (h *harness) send(t testing.TB, secret string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(forgehooksBinary(t), append([]string{"send", "--url", h.hookURL}, args...)...)
	cmd.Env = append(os.Environ(), "FORGE_WEBHOOK_SECRET="+secret)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

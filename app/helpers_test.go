package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/forgetest"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
	"forgehooks.dev/forgehooks/webhookstest"
)

const (
	testAppID        = "424242"
	testInstallation = 42
	testSecret       = "app test secret"
)

// testKey is one RSA key for the whole test binary: generating one is slow.
var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func pkcs1PEM(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

func pkcs8PEM(k any) []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: b})
}

// start is a fixed virtual time.
var start = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// logBuffer is a slog handler's output, safe for concurrent writes, that
// also signals each record whose message is watched.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	watch   string
	matched chan struct{}
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.watch != "" && bytes.Contains(p, []byte(b.watch)) {
		select {
		case b.matched <- struct{}{}:
		default:
		}
	}
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is a fake forge with installation 42, and an App for it.
type env struct {
	t     testing.TB
	forge *forgetest.Server
	logs  *logBuffer
	log   *slog.Logger
	clock *forgetest.Clock // nil: real time
}

// newEnv starts a fake forge; with virtual, the forge and the App share a
// virtual clock.
func newEnv(t testing.TB, virtual bool, fo forgetest.Options) *env {
	t.Helper()
	e := &env{t: t, logs: &logBuffer{matched: make(chan struct{}, 1)}}
	e.log = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fo.AppID, fo.PublicKey = testAppID, &testKey().PublicKey
	if virtual {
		e.clock = forgetest.NewClock(start)
		fo.Now = e.clock.Now
	}
	e.forge = forgetest.New(t, fo)
	e.forge.AddInstallation(testInstallation)
	return e
}

// app returns an App for the fake forge; change adjusts its options.
func (e *env) app(change func(*app.Options)) *app.App {
	e.t.Helper()
	o := app.Options{AppID: testAppID, PrivateKey: pkcs1PEM(testKey()), APIURL: e.forge.URL, Logger: e.log}
	if e.clock != nil {
		o.Clock = e.clock
	}
	if change != nil {
		change(&o)
	}
	a, err := app.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// comment posts body as a comment on issue 1 of octo/site with c.
func (e *env) comment(ctx context.Context, c *http.Client, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.forge.URL+"/repos/octo/site/issues/1/comments", strings.NewReader(fmt.Sprintf(`{"body":%q}`, body)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		return res.StatusCode, fmt.Errorf("%d: %s", res.StatusCode, b)
	}
	return res.StatusCode, nil
}

// commentDelivery is an issue_comment.created delivery from installation
// id (none when id is 0) whose URLs point at api.
func commentDelivery(id int64, api string) []byte {
	b := webhookstest.Payload("issue_comment.created")
	b = bytes.ReplaceAll(b, []byte("https://api.github.com"), []byte(api))
	if id != 0 {
		b = append(bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}")), fmt.Sprintf(`,"installation":{"id":%d,"node_id":"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNDI="}}`, id)...)
	}
	return b
}

// receiver serves wh's middleware on 127.0.0.1 until the test ends.
func receiver(t *testing.T, wh *webhooks.Webhooks, o webhooks.MiddlewareOptions) string {
	t.Helper()
	srv := httptest.NewServer(webhooks.NewMiddleware(wh, o))
	t.Cleanup(srv.Close)
	return srv.URL + webhooks.DefaultPath
}

// deliver POSTs a delivery of event, signed, to url as the forge does and
// returns the status.
func deliver(c *http.Client, url, id, event string, payload []byte) (int, error) {
	sig, err := signing.Sign(testSecret, payload)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, event)
	req.Header.Set(webhooks.HeaderDelivery, id)
	req.Header.Set(webhooks.HeaderSignature, sig)
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

func sign(t *testing.T, body string) string {
	t.Helper()
	sig, err := signing.Sign(testSecret, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

package catchup_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

const (
	testAppID  = "424242"
	testToken  = "forge-token-0123456789abcdef"
	testSecret = "catch-up test secret"
)

// testKey is one RSA key for the whole test binary: generating one is slow.
var testKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// start is a fixed virtual time: tests do not depend on the real clock.
var start = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// env is a fake forge with a virtual clock, and options to run catch-up
// against its app hook.
type env struct {
	t     *testing.T
	clock *forgetest.Clock
	forge *forgetest.Server
	state *catchup.StateFile
}

func newEnv(t *testing.T, o forgetest.Options) *env {
	t.Helper()
	clock := forgetest.NewClock(start)
	o.AppID, o.PublicKey, o.Token, o.Secret, o.Now = testAppID, &testKey().PublicKey, testToken, testSecret, clock.Now
	return &env{t: t, clock: clock, forge: forgetest.New(t, o), state: &catchup.StateFile{Path: filepath.Join(t.TempDir(), "catchup.json")}}
}

// options runs catch-up on the app hook, with the env's clock and state file.
func (e *env) options() catchup.Options {
	creds, err := catchup.NewAppJWT(testAppID, testKey())
	if err != nil {
		e.t.Fatal(err)
	}
	return catchup.Options{
		APIURL: e.forge.URL, Hook: catchup.AppHook(), Credentials: creds,
		Checkpoints: e.state, Clock: e.clock, Logger: discard,
	}
}

func (e *env) run(o catchup.Options) (catchup.Report, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return catchup.Run(ctx, o)
}

// record logs n attempts on hook key, one a minute ending at the clock's
// now, each with its own guid and status code.
func (e *env) record(key string, n int, code int) []forgetest.Attempt {
	var out []forgetest.Attempt
	for i := range n {
		at := e.clock.Now().Add(-time.Duration(n-i) * time.Minute)
		status := "OK"
		if code == 0 {
			status = "failed to connect to host"
		} else if code >= 300 {
			status = "Invalid HTTP Response: 503"
		}
		out = append(out, e.forge.Record(key, forgetest.Attempt{DeliveredAt: at, Status: status, StatusCode: code, Event: "issues", Action: "opened"}, []byte(`{"action":"opened","n":1}`)))
	}
	return out
}

// posts returns the redelivery requests the forge served.
func posts(f *forgetest.Server) []forgetest.Request {
	var out []forgetest.Request
	for _, r := range f.Requests() {
		if r.Method == "POST" {
			out = append(out, r)
		}
	}
	return out
}

package app_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/forgetest"
)

// A PKCS#1 and a PKCS#8 key, from bytes, a file or an environment variable,
// get a token from the forge; the committed testdata keys (made with
// openssl genrsa, and openssl pkcs8 -topk8 -nocrypt of it) parse to one key.
func TestKeyForms(t *testing.T) {
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	dir := t.TempDir()
	file := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(file, pkcs8PEM(testKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_APP_KEY_MULTILINE", string(pkcs1PEM(testKey())))
	t.Setenv("TEST_APP_KEY_ONE_LINE", strings.ReplaceAll(string(pkcs8PEM(testKey())), "\n", `\n`))
	tests := []struct {
		name string
		set  func(*app.Options)
	}{
		{"PKCS#1 bytes", func(o *app.Options) { o.PrivateKey = pkcs1PEM(testKey()) }},
		{"PKCS#8 bytes", func(o *app.Options) { o.PrivateKey = pkcs8PEM(testKey()) }},
		{"PKCS#8 file", func(o *app.Options) { o.PrivateKey, o.PrivateKeyFile = nil, file }},
		{"PKCS#1 env", func(o *app.Options) { o.PrivateKey, o.PrivateKeyEnv = nil, "TEST_APP_KEY_MULTILINE" }},
		{"PKCS#8 env, one line", func(o *app.Options) { o.PrivateKey, o.PrivateKeyEnv = nil, "TEST_APP_KEY_ONE_LINE" }},
		{"parsed", func(o *app.Options) { o.PrivateKey, o.Key = nil, testKey() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.app(tt.set)
			if _, _, err := a.InstallationToken(t.Context(), testInstallation, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	k1, err1 := app.ParsePrivateKey(mustRead(t, "testdata/pkcs1.pem"))
	k8, err8 := app.ParsePrivateKey(mustRead(t, "testdata/pkcs8.pem"))
	if err1 != nil || err8 != nil || !k1.Equal(k8) {
		t.Fatalf("testdata keys: %v, %v, equal %v", err1, err8, err1 == nil && err8 == nil && k1.Equal(k8))
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A wrong key gives an error that says what is wrong, and never quotes it.
func TestWrongKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true, forgetest.Options{SecondaryLimit: -1})
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good := pkcs1PEM(testKey())
	corrupt := bytes.Replace(good, good[100:140], bytes.Repeat([]byte("A"), 40), 1)
	tests := []struct {
		name string
		o    app.Options
		err  string // from New, or else from the first token request
	}{
		{"no app id", app.Options{PrivateKey: good}, "no app id"},
		{"no key", app.Options{AppID: testAppID}, "no private key"},
		{"two keys", app.Options{AppID: testAppID, PrivateKey: good, PrivateKeyFile: "x.pem"}, "several private keys"},
		{"not PEM", app.Options{AppID: testAppID, PrivateKey: []byte("ssh-rsa AAAAB3NzaC1yc2E me@host")}, "no PEM block found"},
		{"public key", app.Options{AppID: testAppID, PrivateKey: pemBlock("PUBLIC KEY", []byte{1, 2})}, `PEM block "PUBLIC KEY"`},
		{"corrupt PKCS#1", app.Options{AppID: testAppID, PrivateKey: corrupt}, "not a valid PKCS#1 RSA key"},
		{"corrupt PKCS#8", app.Options{AppID: testAppID, PrivateKey: pemBlock("PRIVATE KEY", []byte{1, 2, 3})}, "not a valid PKCS#8 key"},
		{"not RSA", app.Options{AppID: testAppID, PrivateKey: pkcs8PEM(ec)}, "*ecdsa.PrivateKey, want RSA"},
		{"too small", app.Options{AppID: testAppID, PrivateKey: pkcs1PEM(small)}, "RSA key of 1024 bits, want at least 2048"},
		{"missing file", app.Options{AppID: testAppID, PrivateKeyFile: filepath.Join(t.TempDir(), "nope.pem")}, "private key file: stat"},
		{"unset env", app.Options{AppID: testAppID, PrivateKeyEnv: "TEST_APP_KEY_UNSET"}, "environment variable TEST_APP_KEY_UNSET is not set"},
		{"bad API URL", app.Options{AppID: testAppID, PrivateKey: good, APIURL: "api.example"}, `API URL "api.example"`},
		{"wrong app's key", app.Options{AppID: testAppID, PrivateKey: pkcs1PEM(other)}, "401 Unauthorized: A JSON web token could not be decoded: signature invalid (the forge refused the app's JWT: check the app id and that the private key is this app's)"},
		{"wrong app id", app.Options{AppID: "7", PrivateKey: good}, "401 Unauthorized: JWT iss 7 is not app 424242"},
		{"no such installation", app.Options{AppID: testAppID, PrivateKey: good}, "installation 43: POST /app/installations/43/access_tokens: 404 Not Found: Not Found (no such installation of this app: uninstalled?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.o.PrivateKey != nil || tt.o.AppID != "" {
				tt.o.APIURL = cmpOr(tt.o.APIURL, e.forge.URL)
			}
			tt.o.Clock = e.clock
			a, err := app.New(tt.o)
			if err == nil {
				id := int64(testInstallation)
				if tt.name == "no such installation" {
					id = 43
				}
				_, _, err = a.InstallationToken(t.Context(), id, nil)
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v\nwant %q", err, tt.err)
			}
			if bytes.Contains([]byte(err.Error()), good[40:80]) || strings.Contains(err.Error(), testKey().N.String()[:20]) {
				t.Error("the error quotes the key")
			}
		})
	}
}

func pemBlock(typ string, b []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

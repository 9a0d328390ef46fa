package catchup_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/forgetest"
)

// The JWT is checked here with the standard library alone, field by field.
func TestSignAppJWT(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	jwt, err := app.SignJWT(testAppID, testKey(), now)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return b
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&testKey().PublicKey, crypto.SHA256, sum[:], dec(parts[2])); err != nil {
		t.Fatalf("signature does not verify with the public key: %v", err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 1024)
	if rsa.VerifyPKCS1v15(&other.PublicKey, crypto.SHA256, sum[:], dec(parts[2])) == nil {
		t.Fatal("signature verifies with another key")
	}
	var header map[string]any
	var claims map[string]any
	if err := json.Unmarshal(dec(parts[0]), &header); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(dec(parts[1]), &claims); err != nil {
		t.Fatal(err)
	}
	if header["alg"] != "RS256" || header["typ"] != "JWT" || len(header) != 2 {
		t.Errorf("header %v", header)
	}
	iat, exp := int64(claims["iat"].(float64)), int64(claims["exp"].(float64))
	if iat != now.Unix()-60 {
		t.Errorf("iat %d, want 60 s before now (%d)", iat, now.Unix())
	}
	if exp-iat > 600 || exp <= now.Unix() {
		t.Errorf("exp %d: want after now and at most 10 min after iat", exp)
	}
	if claims["iss"] != testAppID {
		t.Errorf("iss %v, want %s", claims["iss"], testAppID)
	}
}

// Clock skew: the JWT is issued 60 s in the past so that a forge whose clock
// is up to a minute behind ours still sees iat in the past; a forge ahead of
// us accepts it until it expires.
func TestAppJWTClockSkew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		forgeAhead time.Duration // the forge's clock minus ours
		ok         bool
	}{
		{0, true},
		{-59 * time.Second, true},
		{-61 * time.Second, false}, // iat in the forge's future
		{5 * time.Minute, true},
		{8*time.Minute + 59*time.Second, true},
		{9 * time.Minute, false}, // expired for the forge
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.forgeAhead), func(t *testing.T) {
			e := newEnv(t, forgetest.Options{})
			skewed := func() time.Time { return e.clock.Now().Add(tt.forgeAhead) }
			forge := forgetest.New(t, forgetest.Options{AppID: testAppID, PublicKey: &testKey().PublicKey, Now: skewed})
			o := e.options()
			o.APIURL = forge.URL
			o.MaxTries = 1
			_, err := e.run(o)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, tt.ok)
			}
			if !tt.ok && !strings.Contains(err.Error(), "401") {
				t.Errorf("err = %v, want a 401", err)
			}
		})
	}
}

// A cached JWT is reused while fresh and renewed before it expires.
func TestAppJWTRenewal(t *testing.T) {
	t.Parallel()
	c, err := catchup.NewAppJWT(testAppID, testKey())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	a1, _ := c.Authorization(t.Context(), now)
	a2, _ := c.Authorization(t.Context(), now.Add(6*time.Minute))
	a3, _ := c.Authorization(t.Context(), now.Add(7*time.Minute))
	if !strings.HasPrefix(a1, "Bearer ") || a1 != a2 || a2 == a3 {
		t.Errorf("want the JWT reused at +6 min and renewed at +7 min")
	}
	for i, a := range []string{a1, a3} {
		at := now.Add(time.Duration(i) * 7 * time.Minute)
		if err := forgetest.VerifyJWT(strings.TrimPrefix(a, "Bearer "), &testKey().PublicKey, testAppID, at.Add(time.Minute)); err != nil {
			t.Errorf("JWT %d a minute after use: %v", i, err)
		}
	}
}

func TestParsePrivateKey(t *testing.T) {
	t.Parallel()
	k := testKey()
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(k)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec8, _ := x509.MarshalPKCS8PrivateKey(ec)
	enc := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	tests := []struct {
		name string
		pem  []byte
		err  string
	}{
		{"PKCS#1", enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k)), ""},
		{"PKCS#8", enc("PRIVATE KEY", pkcs8), ""},
		{"PKCS#1 with text around", append(append([]byte("key:\n"), enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k))...), "\n"...), ""},
		{"not PEM", []byte("hello"), "no PEM block"},
		{"public key", enc("PUBLIC KEY", []byte{1, 2}), `PEM block "PUBLIC KEY"`},
		{"corrupt PKCS#1", enc("RSA PRIVATE KEY", []byte{1, 2, 3}), "not a valid PKCS#1"},
		{"corrupt PKCS#8", enc("PRIVATE KEY", []byte{1, 2, 3}), "not a valid PKCS#8"},
		{"EC key", enc("PRIVATE KEY", ec8), "want RSA"},
		{"1024 bits", enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small)), "1024 bits, want at least 2048"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := catchup.ParsePrivateKey(tt.pem)
			if tt.err == "" {
				if err != nil || !got.Equal(k) {
					t.Fatalf("got a different key or %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
			if len(tt.pem) > 40 && bytes.Contains([]byte(err.Error()), tt.pem[20:40]) {
				t.Error("the error quotes the key")
			}
		})
	}
}

// Neither the token, the JWT nor the key reaches the log or an error, even
// when every request is refused or throttled.
func TestCredentialsNeverLogged(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	token := catchup.Token(testToken)
	logger.Info("token", "token", token, "fmt", fmt.Sprintf("%v %s %q %#v", token, token, token, token))
	jwtCreds, _ := catchup.NewAppJWT(testAppID, testKey())
	logger.Info("jwt", "creds", jwtCreds, "fmt", fmt.Sprintf("%v %+v", jwtCreds, jwtCreds))

	e := newEnv(t, forgetest.Options{})
	e.forge.AddHook(forgetest.RepoHook("octo", "site", 7))
	e.forge.Record(forgetest.RepoHook("octo", "site", 7), forgetest.Attempt{Status: "failed", Event: "push"}, []byte(`{}`))
	e.record(forgetest.AppHook, 1, 0)
	e.forge.Fail(forgetest.Fault{Status: 429, Header: http.Header{"Retry-After": {"1"}}, Body: `{}`, Times: 2})
	var errs []string
	for _, o := range []catchup.Options{
		{Hook: catchup.RepoHook("octo", "site", 7), Credentials: token},
		{Hook: catchup.AppHook(), Credentials: jwtCreds},
		{Hook: catchup.AppHook(), Credentials: token},          // refused: 401
		{Hook: catchup.OrgHook("octo", 1), Credentials: token}, // 404
	} {
		o.APIURL, o.Clock, o.Logger = e.forge.URL, e.clock, logger
		if _, err := e.run(o); err != nil {
			errs = append(errs, err.Error())
		}
	}
	jwt, _ := jwtCreds.Authorization(t.Context(), e.clock.Now())
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(testKey())})
	out := logs.String() + strings.Join(errs, "\n")
	if len(errs) != 2 || !strings.Contains(out, "waiting before the next request") {
		t.Fatalf("the runs did not fail and wait as planned: %q\n%s", errs, logs.String())
	}
	for name, secret := range map[string]string{
		"token": testToken, "JWT": strings.TrimPrefix(jwt, "Bearer "), "JWT header": "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9",
		"key": string(keyPEM[40:80]), "key modulus": testKey().N.String()[:20],
	} {
		if strings.Contains(out, secret) {
			t.Errorf("the %s appears in the log or an error", name)
		}
	}
}

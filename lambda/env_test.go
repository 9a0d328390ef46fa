package lambda_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/lambda"
)

func TestCatchupFromEnv(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))

	tests := []struct {
		name    string
		env     map[string]string
		nilOpts bool
		hook    string // the hook's String, when options are returned
		creds   string // "token" or "app"
		err     string
	}{
		{name: "unset", env: map[string]string{lambda.EnvToken: "t"}, nilOpts: true},
		{name: "repository hook", env: map[string]string{lambda.EnvCatchupHook: "repos/octo/site/hooks/7", lambda.EnvToken: "t", lambda.EnvAPIURL: "https://forge.example/api/v3"},
			hook: catchup.RepoHook("octo", "site", 7).String(), creds: "token"},
		{name: "organization hook", env: map[string]string{lambda.EnvCatchupHook: "orgs/octo/hooks/9", lambda.EnvToken: "t"},
			hook: catchup.OrgHook("octo", 9).String(), creds: "token"},
		{name: "app hook", env: map[string]string{lambda.EnvCatchupHook: "app", lambda.EnvAppID: "12345", lambda.EnvAppPrivateKey: keyPEM},
			hook: catchup.AppHook().String(), creds: "app"},
		{name: "app hook with only a token", env: map[string]string{lambda.EnvCatchupHook: "app", lambda.EnvToken: "t"}, err: lambda.EnvAppPrivateKey},
		{name: "app hook, key not PEM", env: map[string]string{lambda.EnvCatchupHook: "app", lambda.EnvAppID: "1", lambda.EnvAppPrivateKey: "nope"}, err: lambda.EnvAppPrivateKey},
		{name: "repository hook without a token", env: map[string]string{lambda.EnvCatchupHook: "repos/octo/site/hooks/7"}, err: lambda.EnvToken},
		{name: "hook id not a number", env: map[string]string{lambda.EnvCatchupHook: "repos/octo/site/hooks/x", lambda.EnvToken: "t"}, err: "want"},
		{name: "hook id zero", env: map[string]string{lambda.EnvCatchupHook: "orgs/octo/hooks/0", lambda.EnvToken: "t"}, err: "want"},
		{name: "empty owner", env: map[string]string{lambda.EnvCatchupHook: "repos//site/hooks/7", lambda.EnvToken: "t"}, err: "want"},
		{name: "something else", env: map[string]string{lambda.EnvCatchupHook: "users/octo/hooks/1", lambda.EnvToken: "t"}, err: lambda.EnvCatchupHook},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			co, err := lambda.CatchupFromEnv(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "BEGIN RSA") {
					t.Fatalf("the error quotes the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.nilOpts {
				if co != nil {
					t.Fatalf("options %+v, want none", co)
				}
				return
			}
			if co == nil {
				t.Fatal("no options")
			}
			if got := co.Hook.String(); got != tt.hook {
				t.Errorf("hook %s, want %s", got, tt.hook)
			}
			if co.APIURL != tt.env[lambda.EnvAPIURL] || co.Checkpoints != nil {
				t.Errorf("APIURL %q, Checkpoints %v: want %q and none", co.APIURL, co.Checkpoints, tt.env[lambda.EnvAPIURL])
			}
			switch c := co.Credentials.(type) {
			case catchup.Token:
				if tt.creds != "token" || string(c) != tt.env[lambda.EnvToken] {
					t.Errorf("credentials: a token, want %s", tt.creds)
				}
			case *catchup.AppJWT:
				if tt.creds != "app" {
					t.Errorf("credentials: an app JWT, want %s", tt.creds)
				}
			default:
				t.Errorf("credentials %T", c)
			}
		})
	}
}

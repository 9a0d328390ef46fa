package forgetest

import (
	"crypto/rsa"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"slices"
	"sync"
)

// DefaultAppID is the app id the fake expects when Options.AppID is empty.
const DefaultAppID = "1"

// appKeyPEM is a 2048-bit RSA key made for tests alone (testdata/README.md):
// published with the source, it must never be any real app's key.
//
//go:embed testdata/app-key.pem
var appKeyPEM []byte

// PrivateKeyPEM returns the built-in app private key (PEM, PKCS#1) whose
// public key the fake uses when Options.PublicKey is nil: give it to an app
// client under test (app.Options.PrivateKey). It is public, for tests only.
func PrivateKeyPEM() []byte { return slices.Clone(appKeyPEM) }

// PrivateKey returns the built-in app private key, parsed.
func PrivateKey() *rsa.PrivateKey { return builtinKey() }

var builtinKey = sync.OnceValue(func() *rsa.PrivateKey {
	b, _ := pem.Decode(appKeyPEM)
	k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
	if err != nil {
		panic("forgetest: the built-in key: " + err.Error())
	}
	return k
})

package app

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// minKeyBits is the smallest RSA key accepted; the forge issues 2048-bit keys.
const minKeyBits = 2048

// ParsePrivateKey parses an app's PEM private key, PKCS#1 ("RSA PRIVATE KEY",
// as the forge issues it) or PKCS#8 ("PRIVATE KEY", as openssl converts it).
// Text around the PEM block is ignored. The key must be RSA of at least 2048
// bits. Errors say what is wrong and never quote the key.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("private key: no PEM block found (want the .pem file the forge gave for the app)")
	}
	var key *rsa.PrivateKey
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("private key: not a valid PKCS#1 RSA key")
		}
		key = k
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("private key: not a valid PKCS#8 key")
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key: a %T, want RSA (the forge signs app JWTs with RS256)", k)
		}
		key = rk
	default:
		return nil, fmt.Errorf("private key: PEM block %q, want \"RSA PRIVATE KEY\" or \"PRIVATE KEY\"", block.Type)
	}
	if n := key.N.BitLen(); n < minKeyBits {
		return nil, fmt.Errorf("private key: RSA key of %d bits, want at least %d", n, minKeyBits)
	}
	return key, nil
}

// loadKey finds the key Options give: exactly one of Key, PrivateKey,
// PrivateKeyFile and PrivateKeyEnv.
func loadKey(o *Options) (*rsa.PrivateKey, error) {
	n := 0
	for _, set := range []bool{o.Key != nil, len(o.PrivateKey) > 0, o.PrivateKeyFile != "", o.PrivateKeyEnv != ""} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, errors.New("no private key: set one of Options.PrivateKey, PrivateKeyFile, PrivateKeyEnv or Key")
	case n > 1:
		return nil, errors.New("several private keys: set only one of Options.PrivateKey, PrivateKeyFile, PrivateKeyEnv and Key")
	case o.Key != nil:
		if n := o.Key.N.BitLen(); n < minKeyBits {
			return nil, fmt.Errorf("private key: RSA key of %d bits, want at least %d", n, minKeyBits)
		}
		return o.Key, nil
	case o.PrivateKeyFile != "":
		b, err := os.ReadFile(o.PrivateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("private key file: %w", err)
		}
		k, err := ParsePrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.PrivateKeyFile, err)
		}
		return k, nil
	case o.PrivateKeyEnv != "":
		v, ok := os.LookupEnv(o.PrivateKeyEnv)
		if !ok || v == "" {
			return nil, fmt.Errorf("private key: environment variable %s is not set", o.PrivateKeyEnv)
		}
		k, err := ParsePrivateKey(envPEM(v))
		if err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", o.PrivateKeyEnv, err)
		}
		return k, nil
	default:
		return ParsePrivateKey(o.PrivateKey)
	}
}

// envPEM undoes what storing a PEM in one line does: a value with no newline
// but literal "\n" sequences (as .env files and CI secrets often hold it) gets
// its newlines back.
func envPEM(v string) []byte {
	b := []byte(v)
	if !bytes.ContainsRune(b, '\n') && bytes.Contains(b, []byte(`\n`)) {
		b = bytes.ReplaceAll(b, []byte(`\n`), []byte("\n"))
	}
	return b
}

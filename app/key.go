package app

import (
	"bytes"
	"cmp"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
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
		return ReadPrivateKeyFile(o.PrivateKeyFile, o.Logger)
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

// MaxKeyFileSize bounds the private key file: a PEM RSA key of 4096 bits is
// about 3.3 KiB.
const MaxKeyFileSize = 16 << 10

// ReadPrivateKeyFile reads and parses an app's private key file (see
// ParsePrivateKey). The file must be a regular file of at most
// MaxKeyFileSize bytes: a FIFO, a device or a huge file is refused at once,
// before any read. A file its group or others may read is used, with a
// warning to log (nil: slog.Default()), as ssh warns.
func ReadPrivateKeyFile(name string, log *slog.Logger) (*rsa.PrivateKey, error) {
	b, err := readKeyFile(name, cmp.Or(log, slog.Default()))
	if err != nil {
		return nil, err
	}
	k, err := ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return k, nil
}

// readKeyFile reads a private key file that must be a regular file of at
// most MaxKeyFileSize bytes: a FIFO, a device or a huge file is refused
// before it is read (a FIFO would block, /dev/zero never ends). A key that
// its group or others may read is warned about, as ssh does.
func readKeyFile(name string, log *slog.Logger) ([]byte, error) {
	// Stat first: opening a FIFO blocks until a writer comes.
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("private key file: %w", err)
	}
	if err := checkKeyFile(name, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("private key file: %w", err)
	}
	defer f.Close()
	// Again on what was opened: the name may have been replaced meanwhile.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("private key file: %w", err)
	}
	if err := checkKeyFile(name, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("private key file: %w", err)
	}
	if len(b) > MaxKeyFileSize {
		return nil, fmt.Errorf("private key file %s: over %d bytes: not an app's private key", name, MaxKeyFileSize)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("app: the private key file can be read by others than its owner: chmod 600 it", "file", name, "mode", fi.Mode().Perm().String())
	}
	return b, nil
}

// checkKeyFile refuses what cannot be a private key file.
func checkKeyFile(name string, fi os.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("private key file %s: not a regular file (%s): want the .pem file the forge gave for the app", name, fi.Mode().Type())
	}
	if fi.Size() > MaxKeyFileSize {
		return fmt.Errorf("private key file %s: %d bytes, over %d: not an app's private key", name, fi.Size(), MaxKeyFileSize)
	}
	return nil
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

// Package natsconn turns the inbox's NATS credentials into connection
// options, and keeps a URL's userinfo out of everything printed.
package natsconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
)

// Auth is inbox.NATSAuth's fields (see its doc): inbox converts one into the
// other.
type Auth struct {
	CredsFile       string
	NkeyFile        string
	User, Password  string
	TLSCA           string
	TLSCert, TLSKey string
}

// Options returns the connection options of a, and urls without their
// userinfo. Errors name files and flags' fields, never a secret.
func Options(a Auth, urls []string) (clean []string, opts []nats.Option, err error) {
	clean, user, pass, hasInfo, err := SplitUserinfo(urls)
	if err != nil {
		return nil, nil, err
	}
	set := 0
	for _, s := range []string{a.CredsFile, a.NkeyFile, a.User} {
		if s != "" {
			set++
		}
	}
	if set > 1 {
		return nil, nil, errors.New("inbox: NATSAuth: give one of a credentials file, an nkey file, or a user")
	}
	if a.Password != "" && a.User == "" {
		return nil, nil, errors.New("inbox: NATSAuth: a password without a user")
	}
	if hasInfo && set > 0 {
		return nil, nil, errors.New("inbox: a NATS URL carries a user and NATSAuth names credentials too: give one")
	}
	switch {
	case a.CredsFile != "":
		if err := readable(a.CredsFile); err != nil {
			return nil, nil, fmt.Errorf("inbox: NATS credentials file: %w", err)
		}
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NkeyFile != "":
		o, err := nats.NkeyOptionFromSeed(a.NkeyFile)
		if err != nil {
			// nats.go's message names the file and the cause, not the seed.
			return nil, nil, fmt.Errorf("inbox: NATS nkey file %s: %w", a.NkeyFile, err)
		}
		opts = append(opts, o)
	case a.User != "":
		user, pass, hasInfo = a.User, a.Password, true
	}
	if hasInfo {
		if pass == "" {
			opts = append(opts, nats.Token(user))
		} else {
			opts = append(opts, nats.UserInfo(user, pass))
		}
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return nil, nil, errors.New("inbox: NATSAuth: a TLS client certificate needs its key, and a key its certificate")
	}
	if a.TLSCA != "" || a.TLSCert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if a.TLSCA != "" {
			pem, err := os.ReadFile(a.TLSCA)
			if err != nil {
				return nil, nil, fmt.Errorf("inbox: NATS TLS CA: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, nil, fmt.Errorf("inbox: NATS TLS CA %s: no PEM certificate in it", a.TLSCA)
			}
		}
		if a.TLSCert != "" {
			cert, err := tls.LoadX509KeyPair(a.TLSCert, a.TLSKey)
			if err != nil {
				return nil, nil, fmt.Errorf("inbox: NATS TLS client certificate %s and key %s: %w", a.TLSCert, a.TLSKey, err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, nats.Secure(cfg))
	}
	return clean, opts, nil
}

// readable checks that name can be opened for reading now, so that a typo
// fails at start with the file's name rather than as an authorization
// error.
func readable(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	return f.Close()
}

// SplitUserinfo returns urls without their userinfo, and the user and
// password they carried (the same in each that carries one).
func SplitUserinfo(urls []string) (clean []string, user, pass string, has bool, err error) {
	for i, s := range urls {
		s = strings.TrimSpace(s)
		if strings.Contains(s, "@") && !strings.Contains(s, "://") {
			s = "nats://" + s // as nats.go reads a URL without a scheme
		}
		u, perr := url.Parse(s)
		if perr != nil || u.User == nil {
			if perr != nil && strings.Contains(s, "@") {
				// url.Parse's error quotes the URL whole.
				return nil, "", "", false, fmt.Errorf("inbox: NATS URL #%d (%s) does not parse", i+1, Redact(s))
			}
			clean = append(clean, s)
			continue
		}
		p, _ := u.User.Password()
		if has && (u.User.Username() != user || p != pass) {
			return nil, "", "", false, errors.New("inbox: the NATS URLs carry different users: give one")
		}
		user, pass, has = u.User.Username(), p, true
		u.User = nil
		clean = append(clean, u.String())
	}
	return clean, user, pass, has, nil
}

// Redact returns s, a URL or a comma-separated list of them, with the
// userinfo of each (nats://user:pass@host) replaced by "redacted", for logs
// and errors. What does not parse as a URL keeps only what follows its
// last '@'.
func Redact(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		at := strings.LastIndex(p, "@")
		if at < 0 {
			continue
		}
		scheme := ""
		if j := strings.Index(p, "://"); j >= 0 && j < at {
			scheme = p[:j+3]
		}
		parts[i] = scheme + "redacted@" + p[at+1:]
	}
	return strings.Join(parts, ",")
}

package main

import (
	"errors"
	"fmt"

	"forgehooks.dev/forgehooks/inbox"
)

// The environment variables a NATS user and password are taken from: never
// from a flag, which ps shows to every user of the machine.
const (
	natsUserEnv     = "FORGEHOOKS_NATS_USER"
	natsPasswordEnv = "FORGEHOOKS_NATS_PASSWORD"
	// inboxKeyEnv holds the inbox key in hex, like --inbox-key-file.
	inboxKeyEnv = "FORGEHOOKS_INBOX_KEY"
)

// natsFlags are the flags that authenticate to a NATS cluster and secure
// the connection (serve, work and inbox, with --nats).
type natsFlags struct {
	creds, nkey            string
	tlsCA, tlsCert, tlsKey string
	keyFile                string
	insecureUnsealed       bool
	getenv                 func(string) string
}

func addNATSFlags(fs *flagSet) *natsFlags {
	f := &natsFlags{getenv: fs.c.getenv}
	fs.StringVar(&f.creds, "nats-creds", "", "with --nats: a NATS credentials `FILE` (user JWT and nkey seed, as nsc writes it); or a user and password from "+natsUserEnv+" and "+natsPasswordEnv)
	fs.StringVar(&f.nkey, "nats-nkey", "", "with --nats: a `FILE` holding the user's nkey seed (SU...)")
	fs.StringVar(&f.tlsCA, "nats-tls-ca", "", "with --nats: PEM `FILE` of the CAs that sign the NATS servers' certificates (TLS required)")
	fs.StringVar(&f.tlsCert, "nats-tls-cert", "", "with --nats: PEM `FILE` of a TLS client certificate (with --nats-tls-key)")
	fs.StringVar(&f.tlsKey, "nats-tls-key", "", "with --nats: PEM `FILE` of the TLS client certificate's key")
	fs.StringVar(&f.keyFile, "inbox-key-file", "", "with --nats: a `FILE` (mode 0600) holding the inbox key in hex, at least 64 digits (openssl rand -hex 32), the same for every serve, work and inbox command of the inbox: messages are sealed with it and run only when their seal holds; or the key in "+inboxKeyEnv)
	fs.BoolVar(&f.insecureUnsealed, "insecure-unsealed", false, "with --nats and no inbox key: store messages unsealed and run any message on the inbox's subjects (whoever may publish there can make the workers run anything)")
	return f
}

// key returns the inbox key for --nats from --inbox-key-file or the
// environment; an error naming both when there is none, unless
// --insecure-unsealed. Its errors never quote the key.
func (f *natsFlags) key() ([]byte, error) {
	if f == nil {
		return nil, nil
	}
	env := ""
	if f.getenv != nil {
		env = f.getenv(inboxKeyEnv)
	}
	switch {
	case f.keyFile != "" && env != "":
		return nil, errors.New("--inbox-key-file and " + inboxKeyEnv + " exclude each other")
	case f.keyFile != "":
		k, err := inbox.ReadKeyFile(f.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--inbox-key-file: %w", err)
		}
		return k, nil
	case env != "":
		k, err := inbox.ParseKey(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", inboxKeyEnv, err)
		}
		return k, nil
	case f.insecureUnsealed:
		return nil, nil
	}
	return nil, errors.New("--nats needs the inbox key that its receivers and workers share: --inbox-key-file FILE or " + inboxKeyEnv +
		" (hex, at least 64 digits: openssl rand -hex 32), or --insecure-unsealed to run unsealed messages (see SECURITY.md)")
}

// set reports whether any of the flags is set. The environment's user is
// not counted: it may be set for every command, --inbox ones included.
func (f *natsFlags) set() bool {
	if f == nil {
		return false
	}
	return f.creds != "" || f.nkey != "" || f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" || f.keyFile != "" || f.insecureUnsealed
}

// auth returns the inbox's NATSAuth from the flags and the environment
// (none from nil flags: inboxFlags made without addInboxFlags).
// Its errors name flags and variables, never their values' secrets.
func (f *natsFlags) auth() (inbox.NATSAuth, error) {
	if f == nil {
		return inbox.NATSAuth{}, nil
	}
	getenv := f.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	a := inbox.NATSAuth{
		CredsFile: f.creds, NkeyFile: f.nkey,
		User: getenv(natsUserEnv), Password: getenv(natsPasswordEnv),
		TLSCA: f.tlsCA, TLSCert: f.tlsCert, TLSKey: f.tlsKey,
	}
	n := 0
	for _, s := range []string{a.CredsFile, a.NkeyFile, a.User} {
		if s != "" {
			n++
		}
	}
	switch {
	case n > 1:
		return a, errors.New("--nats-creds, --nats-nkey and " + natsUserEnv + " exclude each other")
	case a.Password != "" && a.User == "":
		return a, errors.New(natsPasswordEnv + " is set without " + natsUserEnv)
	case (a.TLSCert == "") != (a.TLSKey == ""):
		return a, errors.New("--nats-tls-cert and --nats-tls-key go together")
	}
	return a, nil
}

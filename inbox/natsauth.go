package inbox

import (
	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/inbox/internal/natsconn"
)

// NATSAuth says how an Inbox in a cluster (Options.URLs) proves who it is to
// the NATS servers and how it secures the connection, the ways NATS users
// give them: a credentials file, an nkey seed file, or a user and password;
// and TLS with a CA of its own and a client certificate. At most one of
// CredsFile, NkeyFile and User may be set. The zero value adds nothing:
// a user and password in a URL (nats://user:pass@host) are then used, taken
// out of the URL so that nothing prints them.
type NATSAuth struct {
	// CredsFile is a credentials file (a user JWT and its nkey seed, as
	// nsc writes them), read at each connect.
	CredsFile string
	// NkeyFile holds a user's nkey seed (SU...), which signs the server's
	// challenge.
	NkeyFile string
	// User and Password authenticate with a user and password (a User
	// without Password is sent as a token).
	User, Password string
	// TLSCA is a PEM file of the certificate authorities that the servers'
	// certificates are checked against, instead of the system's. Setting
	// it, or TLSCert, requires TLS.
	TLSCA string
	// TLSCert and TLSKey are PEM files of a client certificate and its key,
	// for servers that verify clients (both or neither).
	TLSCert, TLSKey string
}

// natsOptions returns the connection options of a, and urls without their
// userinfo. Errors name files and flags' fields, never a secret.
func (a NATSAuth) natsOptions(urls []string) (clean []string, opts []nats.Option, err error) {
	return natsconn.Options(natsconn.Auth(a), urls)
}

// RedactURL returns s, a URL or a comma-separated list of them, with the
// userinfo of each (nats://user:pass@host) replaced by "redacted", for logs
// and errors. What does not parse as a URL keeps only what follows its
// last '@'.
func RedactURL(s string) string { return natsconn.Redact(s) }

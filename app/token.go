package app

import (
	"fmt"
	"io"
	"log/slog"
)

const redacted = "[redacted]"

// Token is a secret credential: an installation access token or an app JWT.
// It prints as "[redacted]" with every fmt verb, with log/slog, and as JSON or
// text, so that it cannot reach a log, an error or a page by mistake; Reveal
// returns the secret itself. The zero Token is empty.
type Token struct {
	// A pointer, so that a Token inside another value printed with %v or
	// %+v shows as an address, never as the secret.
	p *string
}

func newToken(s string) Token { return Token{p: &s} }

// Reveal returns the secret. Send it only to the forge (an Authorization
// header, a git URL's password) and never log it.
func (t Token) Reveal() string {
	if t.p == nil {
		return ""
	}
	return *t.p
}

// IsZero reports whether t holds no secret.
func (t Token) IsZero() bool { return t.Reveal() == "" }

// String returns "[redacted]".
func (t Token) String() string { return redacted }

// GoString returns "[redacted]".
func (t Token) GoString() string { return redacted }

// Format writes "[redacted]" whatever the verb and flags.
func (t Token) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// LogValue returns "[redacted]".
func (t Token) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText returns "[redacted]".
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON returns "[redacted]" as a JSON string.
func (t Token) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

package catchup

import (
	"context"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"forgehooks.dev/forgehooks/app"
)

// Credentials authorize requests to the forge's REST API. Implementations must
// be safe for concurrent use and must never log or print the secret they hold.
type Credentials interface {
	// Authorization returns the value of the Authorization header for a
	// request made at now.
	Authorization(ctx context.Context, now time.Time) (string, error)
}

// Token is a token for the repository and organization hooks (a personal or
// installation access token), sent as "Bearer <token>". It prints as
// "[redacted]" with fmt and log/slog, so that it cannot reach a log by mistake.
type Token string

// Authorization implements [Credentials].
func (t Token) Authorization(context.Context, time.Time) (string, error) {
	if t == "" {
		return "", errors.New("empty token")
	}
	return "Bearer " + string(t), nil
}

// String returns "[redacted]", never the token.
func (t Token) String() string { return "[redacted]" }

// GoString returns "[redacted]", never the token.
func (t Token) GoString() string { return "[redacted]" }

// LogValue returns "[redacted]", never the token.
func (t Token) LogValue() slog.Value { return slog.StringValue("[redacted]") }

// AppJWT authorizes as an app, for the app hook, with the app's JSON Web
// Token (RS256, iss = the app id, iat 60 s in the past, exp 10 minutes after
// iat) signed with its private key by package app. A JWT is reused until two
// minutes before it expires. Neither the key nor the JWT is ever printed.
type AppJWT struct {
	app *app.App
}

// NewAppJWT returns credentials for the app appID (its numeric app id, or its
// client id) that sign with key.
func NewAppJWT(appID string, key *rsa.PrivateKey) (*AppJWT, error) {
	if appID == "" {
		return nil, errors.New("app JWT: no app id")
	}
	if key == nil {
		return nil, errors.New("app JWT: no private key")
	}
	a, err := app.New(app.Options{AppID: appID, Key: key})
	if err != nil {
		return nil, err
	}
	return &AppJWT{app: a}, nil
}

// NewAppJWTFrom returns credentials that sign as a, an app whose
// installations' handlers may share it.
func NewAppJWTFrom(a *app.App) *AppJWT { return &AppJWT{app: a} }

// Authorization implements [Credentials]: "Bearer <jwt>".
func (a *AppJWT) Authorization(_ context.Context, now time.Time) (string, error) {
	jwt, err := a.app.JWT(now)
	if err != nil {
		return "", err
	}
	return "Bearer " + jwt.Reveal(), nil
}

// String names the app, never the key.
func (a *AppJWT) String() string { return fmt.Sprintf("app %s JWT (key redacted)", a.app.ID()) }

// LogValue names the app, never the key.
func (a *AppJWT) LogValue() slog.Value { return slog.StringValue(a.String()) }

// ParsePrivateKey parses an app's PEM private key, PKCS#1 ("RSA PRIVATE KEY",
// as the forge issues it) or PKCS#8 ("PRIVATE KEY", as openssl converts it).
// The key must be RSA of at least 2048 bits. Errors never quote the key. It is
// app.ParsePrivateKey.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	return app.ParsePrivateKey(pemBytes)
}

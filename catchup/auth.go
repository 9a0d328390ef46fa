package catchup

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
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

// JWT timing the forge asks for: issued 60 s in the past, to allow for clock
// drift, and valid for no more than 10 minutes.
const (
	jwtBackdate = 60 * time.Second
	jwtLifetime = 10 * time.Minute
	// jwtRenew is how long before expiry a cached JWT is replaced.
	jwtRenew = 2 * time.Minute
)

// AppJWT authorizes as an app, for the app hook, with a JSON Web Token
// (RS256, iss = the app id, iat 60 s in the past, exp 10 minutes after iat)
// signed with the app's private key. A JWT is reused until two minutes before
// it expires. Neither the key nor the JWT is ever printed.
type AppJWT struct {
	appID string
	key   *rsa.PrivateKey

	mu  sync.Mutex
	jwt string
	iat time.Time
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
	return &AppJWT{appID: appID, key: key}, nil
}

// Authorization implements [Credentials]: "Bearer <jwt>".
func (a *AppJWT) Authorization(_ context.Context, now time.Time) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp := a.iat.Add(jwtLifetime)
	if a.jwt == "" || now.Before(a.iat) || !now.Before(exp.Add(-jwtRenew)) {
		jwt, err := SignAppJWT(a.appID, a.key, now)
		if err != nil {
			return "", err
		}
		a.jwt, a.iat = jwt, now.Add(-jwtBackdate)
	}
	return "Bearer " + a.jwt, nil
}

// String names the app, never the key.
func (a *AppJWT) String() string { return fmt.Sprintf("app %s JWT (key redacted)", a.appID) }

// LogValue names the app, never the key.
func (a *AppJWT) LogValue() slog.Value { return slog.StringValue(a.String()) }

// SignAppJWT returns a JWT for app appID made at now: header
// {"alg":"RS256","typ":"JWT"}, claims iat = now-60s, exp = iat+10min,
// iss = appID, signed RSASSA-PKCS1-v1_5 with SHA-256.
func SignAppJWT(appID string, key *rsa.PrivateKey, now time.Time) (string, error) {
	header, _ := json.Marshal(struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}{"RS256", "JWT"})
	iat := now.Add(-jwtBackdate).Unix()
	claims, err := json.Marshal(struct {
		IAT int64  `json:"iat"`
		EXP int64  `json:"exp"`
		ISS string `json:"iss"`
	}{iat, iat + int64(jwtLifetime/time.Second), appID})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("app JWT: signing: %w", err)
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

// minKeyBits is the smallest RSA key accepted; the forge issues 2048-bit keys.
const minKeyBits = 2048

// ParsePrivateKey parses an app's PEM private key, PKCS#1 ("RSA PRIVATE KEY",
// as the forge issues it) or PKCS#8 ("PRIVATE KEY", as openssl converts it).
// The key must be RSA of at least 2048 bits. Errors never quote the key.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("private key: no PEM block found")
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

package app

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// JWT timing the forge asks for: issued 60 s in the past, to allow for clock
// drift, and valid for no more than 10 minutes.
const (
	jwtBackdate = 60 * time.Second
	jwtLifetime = 10 * time.Minute
	// jwtRenew is how long before expiry a cached JWT is replaced.
	jwtRenew = 2 * time.Minute
)

// SignJWT returns a JWT for app appID made at now: header
// {"alg":"RS256","typ":"JWT"}, claims iat = now-60s, exp = iat+10min,
// iss = appID, signed RSASSA-PKCS1-v1_5 with SHA-256.
func SignJWT(appID string, key *rsa.PrivateKey, now time.Time) (string, error) {
	if appID == "" {
		return "", errors.New("app JWT: no app id")
	}
	if key == nil {
		return "", errors.New("app JWT: no private key")
	}
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

// jwtCache keeps the app's JWT until two minutes before it expires.
type jwtCache struct {
	appID string
	key   *rsa.PrivateKey

	mu  sync.Mutex
	jwt Token
	iat time.Time
}

func (c *jwtCache) get(now time.Time) (Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp := c.iat.Add(jwtLifetime)
	if c.jwt.IsZero() || now.Before(c.iat) || !now.Before(exp.Add(-jwtRenew)) {
		jwt, err := SignJWT(c.appID, c.key, now)
		if err != nil {
			return Token{}, err
		}
		c.jwt, c.iat = newToken(jwt), now.Add(-jwtBackdate)
	}
	return c.jwt, nil
}

package signing

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// knownAnswer was computed once with
//
//	printf '{"foo":"bar"}' | openssl dgst -sha256 -hmac mysecret
//
// (OpenSSL 3.0.19) and is committed so that the test does not need openssl.
const knownAnswer = "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3"

func TestSignKnownAnswer(t *testing.T) {
	got, err := Sign("mysecret", []byte(`{"foo":"bar"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got != knownAnswer {
		t.Fatalf("Sign = %s, want %s (openssl)", got, knownAnswer)
	}
}

func TestSign(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		payload []byte
		wantErr error
	}{
		{"ok", "s", []byte("x"), nil},
		{"binary payload", "s", []byte{0, 0xff, '\n'}, nil},
		{"missing secret", "", []byte("x"), ErrMissingSecret},
		{"nil payload", "s", nil, ErrMissingPayload},
		{"empty payload", "s", []byte{}, ErrMissingPayload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := Sign(tt.secret, tt.payload)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if sig != "" {
					t.Errorf("signature %q returned with an error", sig)
				}
				return
			}
			mac := hmac.New(sha256.New, []byte(tt.secret))
			mac.Write(tt.payload)
			if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); sig != want {
				t.Errorf("Sign = %s, want %s", sig, want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	payload := []byte(`{"foo":"bar"}`)
	hexpart := strings.TrimPrefix(knownAnswer, Prefix)
	flip := func(s string, i int) string { // change one hex digit
		b := []byte(s)
		if b[i] == '0' {
			b[i] = '1'
		} else {
			b[i] = '0'
		}
		return string(b)
	}
	tests := []struct {
		name      string
		secret    string
		payload   []byte
		signature string
		want      bool
		wantErr   error
	}{
		{"match", "mysecret", payload, knownAnswer, true, nil},
		{"other secret", "othersecret", payload, knownAnswer, false, nil},
		{"other payload", "mysecret", []byte(`{"foo":"baz"}`), knownAnswer, false, nil},
		{"payload with trailing newline", "mysecret", append(payload[:len(payload):len(payload)], '\n'), knownAnswer, false, nil},
		{"first digit differs", "mysecret", payload, flip(knownAnswer, len(Prefix)), false, nil},
		{"last digit differs", "mysecret", payload, flip(knownAnswer, SignatureLen-1), false, nil},
		{"upper-case hex", "mysecret", payload, Prefix + strings.ToUpper(hexpart), false, nil},
		{"upper-case prefix", "mysecret", payload, "SHA256=" + hexpart, false, nil},
		{"no prefix", "mysecret", payload, hexpart, false, nil},
		{"sha1 prefix", "mysecret", payload, "sha1=" + hexpart, false, nil},
		{"short", "mysecret", payload, knownAnswer[:SignatureLen-1], false, nil},
		{"long", "mysecret", payload, knownAnswer + "0", false, nil},
		{"prefix only", "mysecret", payload, Prefix, false, nil},
		{"non-hex digit", "mysecret", payload, knownAnswer[:SignatureLen-1] + "g", false, nil},
		{"space padded", "mysecret", payload, " " + knownAnswer[:SignatureLen-1], false, nil},
		{"non-ASCII", "mysecret", payload, knownAnswer[:SignatureLen-2] + "é", false, nil},
		{"legacy sha1 signature", "mysecret", payload, signSHA1("mysecret", payload), false, nil},
		{"missing secret", "", payload, knownAnswer, false, ErrMissingSecret},
		{"missing payload", "mysecret", nil, knownAnswer, false, ErrMissingPayload},
		{"missing signature", "mysecret", payload, "", false, ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Verify(tt.secret, tt.payload, tt.signature)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("Verify = %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
			// The incremental form agrees, fed in two pieces.
			if tt.wantErr == nil {
				d, err := NewDigest(tt.secret)
				if err != nil {
					t.Fatal(err)
				}
				half := len(tt.payload) / 2
				d.Write(tt.payload[:half])
				d.Write(tt.payload[half:])
				if got := d.Match(tt.signature); got != tt.want {
					t.Errorf("Digest.Match = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestVerifyWithFallback(t *testing.T) {
	payload := []byte(`{"foo":"bar"}`)
	sig := func(secret string) string {
		s, err := Sign(secret, payload)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name       string
		secret     string
		additional []string
		signature  string
		want       bool
		wantErr    error
	}{
		{"primary", "new", []string{"old"}, sig("new"), true, nil},
		{"first additional", "new", []string{"old", "older"}, sig("old"), true, nil},
		{"second additional", "new", []string{"old", "older"}, sig("older"), true, nil},
		{"none", "new", []string{"old"}, sig("other"), false, nil},
		{"no additional", "new", nil, sig("old"), false, nil},
		{"malformed", "new", []string{"old"}, "sha256=zz", false, nil},
		{"missing secret", "", []string{"old"}, sig("old"), false, ErrMissingSecret},
		{"empty additional", "new", []string{"old", ""}, sig("new"), false, ErrMissingSecret},
		{"missing signature", "new", []string{"old"}, "", false, ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifyWithFallback(tt.secret, payload, tt.signature, tt.additional...)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("VerifyWithFallback = %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := VerifyWithFallback("new", nil, sig("new")); !errors.Is(err, ErrMissingPayload) {
		t.Errorf("missing payload: err = %v", err)
	}
	_, err := VerifyWithFallback("a", payload, sig("a"), "b", "")
	if err == nil || !strings.Contains(err.Error(), "additional secret 2 of 2") {
		t.Errorf("empty additional secret: err = %v, want one naming secret 2 of 2", err)
	}
}

func TestDigest(t *testing.T) {
	if _, err := NewDigest(""); !errors.Is(err, ErrMissingSecret) {
		t.Fatalf("NewDigest(\"\") err = %v", err)
	}
	d, err := NewDigest("mysecret")
	if err != nil {
		t.Fatal(err)
	}
	d.Write([]byte(`{"foo":`))
	if d.Match(knownAnswer) {
		t.Fatal("matched a partial payload")
	}
	d.Write([]byte(`"bar"}`))
	if got := d.Signature(); got != knownAnswer {
		t.Fatalf("Signature = %s", got)
	}
	// Match and Signature do not consume the digest.
	if !d.Match(knownAnswer) || !d.Match(knownAnswer) {
		t.Fatal("Match is not repeatable")
	}
	want, ok := ParseSignature(knownAnswer)
	if !ok || !d.MatchDigest(want) {
		t.Fatal("MatchDigest")
	}
	want[31] ^= 1
	if d.MatchDigest(want) {
		t.Fatal("MatchDigest accepted a changed digest")
	}
}

func TestParseSignature(t *testing.T) {
	got, ok := ParseSignature(knownAnswer)
	want, _ := hex.DecodeString(strings.TrimPrefix(knownAnswer, Prefix))
	if !ok || string(got[:]) != string(want) {
		t.Fatalf("ParseSignature = %x, %v", got, ok)
	}
	// Every byte value in every position: only lower-case hex digits pass.
	for pos := len(Prefix); pos < SignatureLen; pos++ {
		for c := 0; c < 256; c++ {
			b := []byte(knownAnswer)
			b[pos] = byte(c)
			_, ok := ParseSignature(string(b))
			wantOK := c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
			if ok != wantOK {
				t.Fatalf("byte %#x at %d: ok = %v", c, pos, ok)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { ParseSignature(knownAnswer) }); n != 0 {
		t.Errorf("ParseSignature allocates %v times", n)
	}
}

func signSHA1(secret string, payload []byte) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(payload)
	return PrefixSHA1 + hex.EncodeToString(mac.Sum(nil))
}

func TestVerifySHA1(t *testing.T) {
	payload := []byte(`{"foo":"bar"}`)
	good := signSHA1("mysecret", payload)
	tests := []struct {
		name      string
		secret    string
		signature string
		want      bool
		wantErr   error
	}{
		{"match", "mysecret", good, true, nil},
		{"other secret", "other", good, false, nil},
		{"sha256 signature", "mysecret", knownAnswer, false, nil},
		{"upper-case", "mysecret", "sha1=" + strings.ToUpper(good[5:]), false, nil},
		{"short", "mysecret", good[:len(good)-1], false, nil},
		{"missing secret", "", good, false, ErrMissingSecret},
		{"missing signature", "mysecret", "", false, ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := VerifySHA1(tt.secret, payload, tt.signature)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("VerifySHA1 = %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

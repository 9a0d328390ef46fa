package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
)

// deadlock bounds waits that only a bug would make long. It times nothing.
const deadlock = 10 * time.Second

func mustNew(t testing.TB, opts Options) *Webhooks {
	t.Helper()
	wh, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close(context.Background()) })
	return wh
}

func sign(t testing.TB, secret string, body []byte) string {
	t.Helper()
	sig, err := signing.Sign(secret, body)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr error
		message string
	}{
		{"secret", Options{Secret: "s"}, nil, ""},
		{"with additional", Options{Secret: "s", AdditionalSecrets: []string{"old"}}, nil, ""},
		{"missing secret", Options{}, ErrMissingSecret, "webhooks: New: signing: secret is required"},
		{"empty additional", Options{Secret: "s", AdditionalSecrets: []string{"a", ""}}, ErrMissingSecret, "additional secret 2 of 2 is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh, err := New(tt.opts)
			if !errors.Is(err, tt.wantErr) || err != nil && !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.message)
			}
			if (wh == nil) != (err != nil) {
				t.Fatalf("New = %v, %v", wh, err)
			}
		})
	}
	if !errors.Is(ErrMissingSecret, signing.ErrMissingSecret) || !errors.Is(ErrInvalidPayload, emitter.ErrInvalidPayload) {
		t.Error("re-exported sentinels differ")
	}
}

// TestShortSecretWarning: New accepts a secret shorter than MinSecretLen (the
// forge does) but warns, naming which secret and never its value.
func TestShortSecretWarning(t *testing.T) {
	long := strings.Repeat("k", MinSecretLen)
	for _, tc := range []struct {
		name       string
		opts       Options
		wantWhich  []string
		wantSilent bool
	}{
		{"long enough", Options{Secret: long, AdditionalSecrets: []string{long + "2"}}, nil, true},
		{"short primary", Options{Secret: "short-secret"}, []string{`which="the secret"`}, false},
		{"short additional", Options{Secret: long, AdditionalSecrets: []string{long, "old"}}, []string{`which="additional secret 2"`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			tc.opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
			mustNew(t, tc.opts)
			if tc.wantSilent != (log.Len() == 0) {
				t.Fatalf("log = %q", log.String())
			}
			for _, w := range tc.wantWhich {
				if !strings.Contains(log.String(), w) || !strings.Contains(log.String(), "short secret") {
					t.Errorf("log %q lacks %s", log.String(), w)
				}
			}
			if strings.Contains(log.String(), "short-secret") {
				t.Errorf("the warning shows the secret: %q", log.String())
			}
		})
	}
}

func TestSignVerify(t *testing.T) {
	wh := mustNew(t, Options{Secret: "mysecret", AdditionalSecrets: []string{"old"}})
	body := []byte(`{"foo":"bar"}`)
	sig, err := wh.Sign(body)
	if err != nil || sig != "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3" {
		t.Fatalf("Sign = %s, %v", sig, err)
	}
	tests := []struct {
		name    string
		payload []byte
		sig     string
		want    bool
		wantErr error
	}{
		{"primary", body, sig, true, nil},
		{"additional secret is not used", body, sign(t, "old", body), false, nil},
		{"garbage", body, "sha256=nope", false, nil},
		{"missing payload", nil, sig, false, signing.ErrMissingPayload},
		{"missing signature", body, "", false, signing.ErrMissingSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wh.Verify(tt.payload, tt.sig)
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify = %v, %v; want %v, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := wh.Sign(nil); !errors.Is(err, signing.ErrMissingPayload) {
		t.Errorf("Sign(nil) err = %v", err)
	}
}

func TestVerifyAndReceive(t *testing.T) {
	body := []byte(`{"action":"opened"}`)
	errHandler := errors.New("handler failed")
	tests := []struct {
		name      string
		delivery  Delivery
		wantErr   error // nil: success
		wantRan   bool  // the On handler ran
		wantTold  bool  // error handlers were told
		wantInMsg string
	}{
		{"primary secret", Delivery{ID: "1", Name: "issues", Payload: body, Signature: sign(t, "new", body)}, nil, true, false, ""},
		{"additional secret", Delivery{ID: "2", Name: "issues", Payload: body, Signature: sign(t, "old", body)}, nil, true, false, ""},
		{"other secret", Delivery{ID: "3", Name: "issues", Payload: body, Signature: sign(t, "other", body)}, ErrSignatureMismatch, false, true, `webhooks: delivery "3" (event "issues"): signature does not match`},
		{"malformed signature", Delivery{ID: "4", Name: "issues", Payload: body, Signature: "sha256=xyz"}, ErrSignatureMismatch, false, true, ""},
		{"sha1 signature", Delivery{ID: "5", Name: "issues", Payload: body, Signature: "sha1=0123456789012345678901234567890123456789"}, ErrSignatureMismatch, false, true, ""},
		{"missing signature", Delivery{ID: "6", Name: "issues", Payload: body}, signing.ErrMissingSignature, false, true, "signature does not match"},
		{"missing payload", Delivery{ID: "7", Name: "issues", Signature: sign(t, "new", body)}, signing.ErrMissingPayload, false, true, ""},
		{"invalid payload", Delivery{ID: "8", Name: "issues", Payload: []byte(`[1]`), Signature: sign(t, "new", []byte(`[1]`))}, ErrInvalidPayload, false, false, ""},
		{"missing name", Delivery{ID: "9", Payload: body, Signature: sign(t, "new", body)}, emitter.ErrMissingName, false, false, ""},
		{"handler fails", Delivery{ID: "10", Name: "push", Payload: []byte(`{}`), Signature: sign(t, "new", []byte(`{}`))}, errHandler, false, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := mustNew(t, Options{Secret: "new", AdditionalSecrets: []string{"old"}})
			ran := false
			wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error { ran = true; return nil })
			wh.On("push", func(ctx context.Context, e emitter.Event) error { return errHandler })
			told := make(chan *emitter.Error, 1)
			wh.OnError(func(ctx context.Context, err *emitter.Error) { told <- err })
			err := wh.VerifyAndReceive(context.Background(), tt.delivery)
			if tt.wantErr == nil && err != nil || !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if errors.Is(tt.wantErr, signing.ErrMissingSignature) || errors.Is(tt.wantErr, signing.ErrMissingPayload) {
				if !errors.Is(err, ErrSignatureMismatch) {
					t.Errorf("err = %v does not wrap ErrSignatureMismatch", err)
				}
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantInMsg) {
				t.Errorf("message %q does not contain %q", err, tt.wantInMsg)
			}
			if ran != tt.wantRan {
				t.Errorf("handler ran = %v, want %v", ran, tt.wantRan)
			}
			wh.Close(context.Background()) // waits for error handlers
			select {
			case herr := <-told:
				if !tt.wantTold {
					t.Fatalf("error handlers told: %v", herr)
				}
				if herr.Event.ID != tt.delivery.ID || herr.Event.Name != tt.delivery.Name || string(herr.Event.Payload) != string(tt.delivery.Payload) {
					t.Errorf("told of event %+v, want the delivery", herr.Event)
				}
				if !errors.Is(herr, tt.wantErr) {
					t.Errorf("told %v, want %v", herr, tt.wantErr)
				}
			default:
				if tt.wantTold {
					t.Fatal("error handlers not told")
				}
			}
		})
	}
}

func TestWithStatus(t *testing.T) {
	base := errors.New("teapot")
	if WithStatus(418, nil) != nil {
		t.Fatal("WithStatus(nil) is not nil")
	}
	err := WithStatus(418, base)
	if err.Error() != "teapot" || !errors.Is(err, base) {
		t.Fatalf("WithStatus: %v", err)
	}
	for _, tt := range []struct {
		err  error
		want int
	}{
		{err, 418},
		{WithStatus(503, base), 503},
		{WithStatus(200, base), 500},
		{WithStatus(600, base), 500},
		{base, 500},
		{&emitter.PanicError{Value: WithStatus(409, base)}, 409},
	} {
		if got := statusOf(tt.err); got != tt.want {
			t.Errorf("statusOf(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestUnknownNameWarning checks that New wires Options.KnownEvent into the
// emitter: a name it does not know is registered, with a warning.
func TestUnknownNameWarning(t *testing.T) {
	for _, tc := range []struct {
		name string
		warn bool
	}{
		{"issues", false},
		{"issues.opened", false},
		{"repository_dispatch.any_custom_type", false},
		{"issues.opend", true},
		{"isues", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			known := func(name string) bool {
				return slices.Contains([]string{"issues", "issues.opened", "repository_dispatch.any_custom_type"}, name)
			}
			wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.NewTextHandler(&log, nil)), KnownEvent: known})
			ran := false
			wh.On(tc.name, func(context.Context, emitter.Event) error { ran = true; return nil })
			if got := strings.Contains(log.String(), "unknown event name"); got != tc.warn {
				t.Errorf("warning logged = %v, want %v; log: %q", got, tc.warn, log.String())
			}
			name, action, _ := strings.Cut(tc.name, ".")
			payload := `{}`
			if action != "" {
				payload = `{"action":"` + action + `"}`
			}
			if err := wh.Receive(context.Background(), emitter.Event{Name: name, Payload: []byte(payload)}); err != nil {
				t.Fatal(err)
			}
			if !ran {
				t.Error("handler registered under an unknown name did not run")
			}
		})
	}
}

// TestUnknownNameWarnsByDefault: without Options.KnownEvent, the names of
// this module's schema are the known ones: a typo logs one warning naming it,
// a known name none.
func TestUnknownNameWarnsByDefault(t *testing.T) {
	var log strings.Builder
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	h := func(context.Context, emitter.Event) error { return nil }
	wh.On("push", h)
	wh.On("pull_request.opened", h)
	if freeFormActions(t, "repository_dispatch") {
		wh.On("repository_dispatch.my_custom_type", h)
	}
	if log.Len() != 0 {
		t.Fatalf("known names logged: %q", log.String())
	}
	wh.On("push.opend", h)
	if n := strings.Count(log.String(), "unknown event name"); n != 1 || !strings.Contains(log.String(), "name=push.opend") {
		t.Errorf("%d warnings; log: %q", n, log.String())
	}
}

// TestUnknownVariant: New refuses a server variant the schema does not know.
func TestUnknownVariant(t *testing.T) {
	_, err := New(Options{Secret: secret, Variant: "no-such-variant"})
	if err == nil || !strings.Contains(err.Error(), `"no-such-variant"`) {
		t.Errorf("New with an unknown variant: %v", err)
	}
}

// TestZeroWebhooksPanicsSayingNew: a Webhooks not made by New has no secret;
// each way in panics with a message that names New, rather than a nil
// dereference or, worse, dispatching unverified.
func TestZeroWebhooksPanicsSayingNew(t *testing.T) {
	h := func(context.Context, emitter.Event) error { return nil }
	body := []byte(`{}`)
	for name, call := range map[string]func(w *Webhooks){
		"On":      func(w *Webhooks) { w.On("push", h) },
		"OnAny":   func(w *Webhooks) { w.OnAny(h) },
		"Logger":  func(w *Webhooks) { w.Logger() },
		"Receive": func(w *Webhooks) { _ = w.Receive(context.Background(), emitter.Event{Name: "push", Payload: body}) },
		"VerifyAndReceive": func(w *Webhooks) {
			_ = w.VerifyAndReceive(context.Background(), Delivery{Name: "push", Payload: body, Signature: "sha256=00"})
		},
		"Sign":   func(w *Webhooks) { _, _ = w.Sign(body) },
		"Verify": func(w *Webhooks) { _, _ = w.Verify(body, "sha256=00") },
		"Close":  func(w *Webhooks) { _ = w.Close(context.Background()) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, "webhooks.New") {
					t.Errorf("panic %v; want a message naming webhooks.New", r)
				}
			}()
			call(new(Webhooks))
		})
	}
}

// TestReceiveDelivery: the handlers of a delivery received as one value see
// that value in their context, not one the caller's context carries; after
// Close it runs nothing.
func TestReceiveDelivery(t *testing.T) {
	t.Parallel()
	wh := mustNew(t, Options{Secret: "s"})
	got := make(chan Delivery, 1)
	wh.OnAny(func(ctx context.Context, e emitter.Event) error {
		d, _ := DeliveryFrom(ctx)
		if d.ID != e.ID || string(d.Payload) != string(e.Payload) {
			t.Errorf("event %+v beside delivery %+v", e, d)
		}
		got <- d
		return nil
	})
	d := Delivery{ID: "d-1", Name: "issues", Payload: []byte(`{"action":"opened"}`), Attempt: 3, Tenant: "acme",
		Header: map[string][]string{"X-Test": {"kept"}}, ReceivedAt: time.Unix(1, 0)}
	other := ContextWithDelivery(context.Background(), Delivery{ID: "other", Name: "push", Attempt: 9})
	if err := wh.ReceiveDelivery(other, d); err != nil {
		t.Fatal(err)
	}
	seen := <-got
	if seen.ID != d.ID || seen.Name != d.Name || seen.Attempt != 3 || seen.Tenant != "acme" || seen.Header.Get("X-Test") != "kept" || !seen.ReceivedAt.Equal(d.ReceivedAt) {
		t.Errorf("the handlers saw %+v, want %+v", seen, d)
	}
	if err := wh.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := wh.ReceiveDelivery(context.Background(), d); !errors.Is(err, emitter.ErrClosed) {
		t.Errorf("after Close: %v, want emitter.ErrClosed", err)
	}
}

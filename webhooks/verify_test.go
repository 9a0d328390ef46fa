package webhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
)

// TestReusedDigestsStartClean: the keyed digests that VerifyAndReceive and the
// middleware reuse never carry bytes from one delivery to the next, whether the
// one before matched, failed, or was cut off mid-body; concurrently, under the
// race detector.
func TestReusedDigestsStartClean(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret, Logger: slog.New(slog.DiscardHandler)})
	wh.OnAny(func(context.Context, emitter.Event) error { return nil })
	mw := NewMiddleware(wh, MiddlewareOptions{Logger: slog.New(slog.DiscardHandler)})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				body := []byte(fmt.Sprintf(`{"action":"opened","n":%d,"g":%d}`, i, g))
				sig, _ := signing.Sign(secret, body)
				bad, _ := signing.Sign("another secret", body)
				d := Delivery{ID: "d", Name: "issues", Payload: body, Signature: sig}
				if err := wh.VerifyAndReceive(context.Background(), d); err != nil {
					t.Errorf("valid delivery %d: %v", i, err)
				}
				d.Signature = bad
				if err := wh.VerifyAndReceive(context.Background(), d); !errors.Is(err, ErrSignatureMismatch) {
					t.Errorf("forged delivery %d: %v", i, err)
				}
				// A body cut off mid-way, then a whole one.
				for _, rd := range []io.Reader{io.MultiReader(strings.NewReader(string(body[:5])), &errReader{}), strings.NewReader(string(body))} {
					r := httptest.NewRequest(http.MethodPost, DefaultPath, rd)
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set(HeaderEvent, "issues")
					r.Header.Set(HeaderDelivery, "d")
					r.Header.Set(HeaderSignature, sig)
					w := httptest.NewRecorder()
					mw.ServeHTTP(w, r)
					if _, whole := rd.(*strings.Reader); whole && w.Code != http.StatusOK {
						t.Errorf("delivery %d after a cut one: %d %s", i, w.Code, w.Body)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestVerifyAndReceiveClipsValues: a forged delivery's id and event name are
// clipped in the error, whatever their size.
func TestVerifyAndReceiveClipsValues(t *testing.T) {
	wh := mustNew(t, Options{Secret: secret})
	huge := strings.Repeat("\xff", 1<<20)
	sig, _ := signing.Sign("another secret", []byte(`{}`))
	err := wh.VerifyAndReceive(context.Background(), Delivery{ID: huge, Name: huge, Payload: []byte(`{}`), Signature: sig})
	if err == nil || len(err.Error()) > 1024 || !bytes.Contains([]byte(err.Error()), []byte("truncated; 1048576 bytes")) {
		t.Errorf("error of %d bytes: %.300q", len(err.Error()), err)
	}
}

package inspector_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

// An app mounts the inspector on its own admin mux, and feeds it from the
// middleware's OnResult. Without a durable inbox it keeps the last deliveries
// in memory.
func ExampleNew() {
	wh, _ := webhooks.New(webhooks.Options{Secret: "s3cret"})
	wh.On("issues.opened", func(ctx context.Context, e emitter.Event) error { return nil })

	insp := inspector.New(inspector.Options{Webhooks: wh, MaxRecords: 500})
	defer insp.Close()
	mw := webhooks.NewMiddleware(wh, webhooks.MiddlewareOptions{OnResult: insp.OnResult})

	admin := http.NewServeMux()
	admin.Handle("/inspector/", http.StripPrefix("/inspector", insp)) // open /inspector/
	_ = admin

	// A delivery arrives...
	body := []byte(`{"action":"opened","repository":{"full_name":"o/r"}}`)
	sig, _ := signing.Sign("s3cret", body)
	req := httptest.NewRequest("POST", webhooks.DefaultPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooks.HeaderEvent, "issues")
	req.Header.Set(webhooks.HeaderDelivery, "d-1")
	req.Header.Set(webhooks.HeaderSignature, sig)
	mw.ServeHTTP(httptest.NewRecorder(), req)

	// ...and the page lists it; Replay runs its handlers again.
	recs, _ := insp.Ring().List(context.Background(), delivery.ListOptions{})
	fmt.Println(recs[0].ID, recs[0].PayloadName(), recs[0].Status)
	insp.Ring().Replay(context.Background(), "d-1")
	rec, _ := insp.Ring().Get(context.Background(), "d-1")
	fmt.Println(len(rec.Attempts), "attempts,", rec.Status)
	// Output:
	// d-1 issues.opened handled
	// 2 attempts, handled
}

package sourceip_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"forgehooks.dev/forgehooks/sourceip"
)

// A receiver that takes requests only from the forge's hook ranges, read
// from its API's /meta at start and every hour.
func Example() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"hooks":["192.0.2.0/24","0.0.0.0/0"]}`)) // the second is refused: too wide
	}))
	defer api.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	f := sourceip.New(sourceip.Options{Logger: quiet})
	meta := &sourceip.Meta{APIURL: api.URL, Logger: quiet}
	if err := f.Refresh(ctx, time.Hour, meta.Fetch); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Ranges())

	endpoint := f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted) // a webhooks middleware, in a receiver
	}))
	for _, from := range []string{"192.0.2.10:443", "[::ffff:192.0.2.11]:443", "198.51.100.1:443"} {
		req := httptest.NewRequest("POST", "/api/forge/webhooks", nil)
		req.RemoteAddr = from
		rec := httptest.NewRecorder()
		endpoint.ServeHTTP(rec, req)
		fmt.Println(from, rec.Code)
	}
	// Output:
	// [192.0.2.0/24]
	// 192.0.2.10:443 202
	// [::ffff:192.0.2.11]:443 202
	// 198.51.100.1:443 403
}

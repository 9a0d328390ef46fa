package forgefunction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/GoogleCloudPlatform/functions-framework-go/funcframework"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/signing"
	"forgehooks.dev/forgehooks/webhooks"
)

const secret = "cloud-functions-example-secret-0123"

// TestOverTheFrameworksServer posts deliveries to the functions framework's
// own HTTP server on 127.0.0.1, serving the function as the platform does
// (FUNCTION_TARGET at "/").
func TestOverTheFrameworksServer(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	getenv = func(k string) string {
		if k == "FORGE_WEBHOOK_SECRET" {
			return secret
		}
		return ""
	}
	register = func(wh *webhooks.Webhooks) {
		wh.OnAny(func(ctx context.Context, e emitter.Event) error {
			if e.Name == "slow" {
				time.Sleep(200 * time.Millisecond)
			}
			mu.Lock()
			ran = append(ran, e.ID)
			mu.Unlock()
			if e.Name == "fail" {
				return errors.New("handler failed")
			}
			return nil
		})
	}
	t.Setenv("FUNCTION_TARGET", "ForgeWebhook")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	// The framework's server has no way to stop: it ends with the test binary.
	go func() {
		if err := funcframework.StartHostPort("127.0.0.1", port); err != nil {
			t.Errorf("funcframework: %v", err)
		}
	}()
	url := "http://127.0.0.1:" + port + "/"
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		if i == 500 {
			t.Fatal("the framework's server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	payload := `{"action":"opened","issue":{"number":1}}`
	good, _ := signing.Sign(secret, []byte(payload))
	bad, _ := signing.Sign("another-secret-0123456789", []byte(payload))
	for i, tt := range []struct {
		event, sig string
		status     int
		ran        bool
	}{
		{"issues", good, 200, true},
		{"issues", bad, 400, false},
		{"fail", good, 500, true},
		{"slow", good, 200, true}, // the answer waits for the handler
	} {
		t.Run(fmt.Sprintf("%s/%d", tt.event, tt.status), func(t *testing.T) {
			id := fmt.Sprintf("delivery-%d", i)
			r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(payload))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Forge-Event", tt.event)
			r.Header.Set("X-Forge-Delivery", id)
			r.Header.Set("X-Hub-Signature-256", tt.sig)
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			mu.Lock()
			got := strings.Contains(strings.Join(ran, " ")+" ", id+" ")
			mu.Unlock()
			if res.StatusCode != tt.status || got != tt.ran {
				t.Fatalf("answer %d %q, handler ran before it: %v; want %d, %v", res.StatusCode, body, got, tt.status, tt.ran)
			}
		})
	}
}

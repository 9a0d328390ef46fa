package webhooks

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/signing"
)

// TestMiddlewareBudgets checks the byte budgets over HTTP: bodies not yet
// verified (503 before the body is read, by Content-Length), and payloads of
// deliveries whose handlers run (503 past MaxRunningBytes).
func TestMiddlewareBudgets(t *testing.T) {
	t.Run("unverified bodies", func(t *testing.T) {
		h := newHostile(t, MiddlewareOptions{MaxUnverifiedBytes: 100 << 10})
		// A forged body announced as 80 KiB, held after its first byte.
		held, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		fmt.Fprintf(held, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Forge-Event: push\r\nX-Forge-Delivery: held\r\nX-Hub-Signature-256: sha256=00\r\n\r\n{", DefaultPath, 80<<10)
		deadline := time.Now().Add(generous)
		for h.mw.unverified.used.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the held body never reserved its bytes")
			}
			time.Sleep(time.Millisecond)
		}
		if used := h.mw.unverified.used.Load(); used != 80<<10+1 {
			t.Errorf("reserved %d bytes for an 80 KiB body, want %d", used, 80<<10+1)
		}

		// Another announced as 50 KiB is refused from its headers alone.
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Forge-Event: push\r\nX-Forge-Delivery: second\r\nX-Hub-Signature-256: sha256=00\r\n\r\n", DefaultPath, 50<<10)
		c.SetReadDeadline(time.Now().Add(generous))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer before the body was sent: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != fmt.Sprint(RetryAfter) || !res.Close {
			t.Errorf("over the budget: %d, Retry-After %q, close %v; want 503, %d, true", res.StatusCode, res.Header.Get("Retry-After"), res.Close, RetryAfter)
		}
		if !strings.Contains(h.logs.text(), "unverified bodies over budget") {
			t.Errorf("the refusal is not logged:\n%s", h.logs.text())
		}

		// A small valid delivery still fits.
		client := &http.Client{Timeout: generous}
		if code, body := post(t, client, "http://"+h.addr+DefaultPath, "issues", "small", []byte(`{"action":"opened"}`)); code != http.StatusOK {
			t.Errorf("small delivery beside the held body: %d %s", code, body)
		}

		held.Close()
		for h.mw.unverified.used.Load() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("budget holds %d bytes after the held connection closed", h.mw.unverified.used.Load())
			}
			time.Sleep(time.Millisecond)
		}
	})
	t.Run("running deliveries", func(t *testing.T) {
		h := newHostile(t, MiddlewareOptions{MaxRunningBytes: 1000, Timeout: time.Nanosecond})
		client := &http.Client{Timeout: generous}
		url := "http://" + h.addr + DefaultPath
		body := func(n int) []byte { return []byte(`{"pad":"` + strings.Repeat("x", n-10) + `"}`) }
		if code, msg := post(t, client, url, "never", "big-1", body(600)); code != http.StatusAccepted {
			t.Fatalf("first: %d %s", code, msg)
		}
		res, msg := doRaw(t, client, url, "never", body(600))
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" || !strings.Contains(msg, "Too many deliveries") {
			t.Errorf("past MaxRunningBytes: %d %s (Retry-After %q)", res.StatusCode, msg, res.Header.Get("Retry-After"))
		}
		if code, msg := post(t, client, url, "never", "small", body(300)); code != http.StatusAccepted {
			t.Errorf("within the budget: %d %s", code, msg)
		}
		if n, b := h.wh.inFlight.load(); n != 2 || b != 900 {
			t.Errorf("running: %d deliveries, %d bytes; want 2, 900", n, b)
		}
	})
}

// TestCloseLogsAbandoned: deliveries whose handlers still run when Close's
// deadline passes are logged with their ids.
func TestCloseLogsAbandoned(t *testing.T) {
	h := newHostile(t, MiddlewareOptions{Timeout: time.Nanosecond})
	client := &http.Client{Timeout: generous}
	url := "http://" + h.addr + DefaultPath
	for _, id := range []string{"stuck-1", "stuck-2"} {
		if code, msg := post(t, client, url, "never", id, []byte(`{}`)); code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", id, code, msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := h.wh.Close(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Close = %v, want the deadline", err)
	}
	logs := h.logs.text()
	for _, id := range []string{"stuck-1", "stuck-2"} {
		if !strings.Contains(logs, "delivery abandoned while its handlers ran delivery="+id) {
			t.Errorf("%s not logged as abandoned:\n%s", id, logs)
		}
	}
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

package webhooks

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMiddlewareBudgets checks the byte budgets over HTTP: bodies not yet
// verified (503 before the body is read, by Content-Length), and payloads of
// deliveries whose handlers run (503 past MaxRunningBytes).
func TestMiddlewareBudgets(t *testing.T) {
	t.Parallel()
	t.Run("unverified bodies", func(t *testing.T) {
		t.Parallel()
		h := newHostile(t, MiddlewareOptions{MaxUnverifiedBytes: 100 << 10})
		// A forged body announced as 80 KiB, held after its first byte, is
		// charged for its first buffer only.
		held, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		fmt.Fprintf(held, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Forge-Event: push\r\nX-Forge-Delivery: held\r\nX-Hub-Signature-256: sha256=00\r\n\r\n{", DefaultPath, 80<<10)
		deadline := time.Now().Add(generous)
		for h.mw.unverified.Used() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the held body never reserved its bytes")
			}
			time.Sleep(time.Millisecond)
		}
		if used := h.mw.unverified.Used(); used != firstBodyBuffer {
			t.Errorf("reserved %d bytes for an 80 KiB body that sent 1 byte, want %d", used, firstBodyBuffer)
		}
		// Sent 70 KiB more, it grows to its announced size: the budget then
		// holds 80 KiB + 1 of 100.
		if _, err := held.Write(make([]byte, 70<<10)); err != nil {
			t.Fatal(err)
		}
		for h.mw.unverified.Used() != 80<<10+1 {
			if time.Now().After(deadline) {
				t.Fatalf("budget holds %d bytes, want %d", h.mw.unverified.Used(), 80<<10+1)
			}
			time.Sleep(time.Millisecond)
		}

		// Another one is refused once it outgrows the budget (after waiting
		// for room).
		client := &http.Client{Timeout: generous}
		body := []byte(`{"pad":"` + strings.Repeat("x", 40<<10) + `"}`)
		res, msg := doRaw(t, client, "http://"+h.addr+DefaultPath, "push", body)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != fmt.Sprint(RetryAfter) || !res.Close {
			t.Errorf("over the budget: %d %s, Retry-After %q, close %v; want 503, %d, true", res.StatusCode, msg, res.Header.Get("Retry-After"), res.Close, RetryAfter)
		}
		if !strings.Contains(h.logs.text(), "unverified bodies over budget") {
			t.Errorf("the refusal is not logged:\n%s", h.logs.text())
		}

		// A small valid delivery from another address still fits: the held
		// body's address holds more than its half of the budget, this one
		// nothing.
		other := &http.Client{Timeout: generous, Transport: &http.Transport{DialContext: (&net.Dialer{
			LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
		start := time.Now()
		if code, body := post(t, other, "http://"+h.addr+DefaultPath, "issues", "small", []byte(`{"action":"opened"}`)); code != http.StatusOK {
			t.Errorf("small delivery from another address beside the held body: %d %s", code, body)
		}
		// Waiting for room would have taken budgetWait (nothing is given
		// back meanwhile): a bound that load cannot reach by itself.
		if took := time.Since(start); took >= budgetWait {
			t.Errorf("small delivery from another address waited %v", took)
		}

		held.Close()
		for h.mw.unverified.Used() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("budget holds %d bytes after the held connection closed", h.mw.unverified.Used())
			}
			time.Sleep(time.Millisecond)
		}
	})
	t.Run("running deliveries", func(t *testing.T) {
		t.Parallel()
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

package webhooks

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyCut: a body that brings less than MinBodyRate × the window in
// a window is answered 408 with Connection: close, and its bytes are given
// back; one that keeps the rate is read to its end.
func TestSlowBodyCut(t *testing.T) {
	h := newHostile(t, MiddlewareOptions{MinBodyRate: 1000})
	// 1000 bytes per window: at twice the rate, a window has half a second
	// to spare for a sender that a loaded machine holds up.
	h.mw.window = time.Second
	body := []byte(`{"action":"opened","pad":"` + strings.Repeat("x", 2000) + `"}`)
	send := func(t *testing.T, piece int, pause time.Duration) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: issues\r\n%s: slow\r\n%s: %s\r\n\r\n",
			DefaultPath, len(body), HeaderEvent, HeaderDelivery, HeaderSignature, validSig(body))
		go func() {
			for i := 0; i < len(body); i += piece {
				if _, err := c.Write(body[i:min(len(body), i+piece)]); err != nil {
					return
				}
				time.Sleep(pause)
			}
		}()
		c.SetReadDeadline(time.Now().Add(generous))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	t.Run("below the rate", func(t *testing.T) {
		start := time.Now()
		res := send(t, 1, 100*time.Millisecond) // 10 bytes/s
		if res.StatusCode != http.StatusRequestTimeout || !res.Close {
			t.Errorf("trickled body: %d, close %v; want 408, true", res.StatusCode, res.Close)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("cut after %v; want about one window", took)
		}
		if !strings.Contains(h.logs.text(), "body below the minimum rate") {
			t.Errorf("the cut is not logged:\n%s", h.logs.text())
		}
		if used := h.mw.unverified.Used(); used != 0 {
			t.Errorf("budget holds %d bytes after the cut", used)
		}
	})
	t.Run("at the rate", func(t *testing.T) {
		res := send(t, 200, 100*time.Millisecond) // 2000 bytes/s
		if res.StatusCode != http.StatusOK {
			t.Errorf("body at twice the minimum rate: %d", res.StatusCode)
		}
	})
}

// TestDeliveryIDs: an X-Forge-Delivery longer than MaxDeliveryIDLen or not
// printable ASCII is refused with 400 before the body is read, and not
// logged.
func TestDeliveryIDs(t *testing.T) {
	h := newHostile(t, MiddlewareOptions{})
	client := &http.Client{Timeout: generous}
	url := "http://" + h.addr + DefaultPath
	body := []byte(`{"action":"opened"}`)
	for _, tt := range []struct {
		id   string
		want int
	}{
		{"72d3162e-cc78-11e3-81ab-4c9367dc0958", 200},
		{strings.Repeat("a", MaxDeliveryIDLen), 200},
		{"with space and ~!@#", 200},
		{strings.Repeat("a", MaxDeliveryIDLen+1), 400},
		{strings.Repeat("z", 20<<10), 400},
		{"tab\there", 400},
		{"caf\u00e9", 400},
		{"nul\x00", 400},
	} {
		r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(HeaderEvent, "issues")
		r.Header[HeaderDelivery] = []string{tt.id}
		r.Header.Set(HeaderSignature, validSig(body))
		res, err := client.Do(r)
		if err != nil {
			// net/http refuses to send some of these itself.
			if tt.want == 400 {
				continue
			}
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.want {
			t.Errorf("id %.40q (%d bytes): %d, want %d", tt.id, len(tt.id), res.StatusCode, tt.want)
		}
	}
	if logs := h.logs.text(); strings.Contains(logs, strings.Repeat("z", 300)) {
		t.Error("a refused id was logged")
	}
	if got := h.runs.Load(); got != 3 {
		t.Errorf("handlers ran %d times, want 3 (the valid ids)", got)
	}
}

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
	h.mw.window = 300 * time.Millisecond // 300 bytes per window
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
		if used := h.mw.unverified.used.Load(); used != 0 {
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

// TestBudgetShares: large bodies hold at most three quarters of the budget
// together, so that small ones always find room; one client address holds
// at most half of it in buffers past the first two, so that other addresses
// do, and its own new deliveries start.
func TestBudgetShares(t *testing.T) {
	const max = 8 << 20 // large bodies: 6 MiB; one client: 4 MiB
	b := &budget{max: max}
	a1 := reservation{b: b, client: "a"}
	if !a1.grow(3 << 20) {
		t.Fatal("a's first large body refused")
	}
	a2 := reservation{b: b, client: "a"}
	if a2.grow(2 << 20) {
		t.Error("a's second large body granted past a's half of the budget")
	}
	a3 := reservation{b: b, client: "a"}
	if !a3.grow(1 << 20) {
		t.Error("a's small body refused within a's half")
	}
	if a3.grow(256 << 10) {
		t.Error("a's small body grown past a's half")
	}
	a4 := reservation{b: b, client: "a"}
	if !a4.grow(64 << 10) {
		t.Error("a's new body refused its first buffers with a's half taken")
	}
	a4.release()
	bb := reservation{b: b, client: "b"}
	if !bb.grow(3 << 20) {
		t.Fatal("b's large body refused with 4 MiB free")
	}
	c1 := reservation{b: b, client: "c"}
	if c1.grow(2 << 20) {
		t.Error("a large body granted past the three quarters kept for large bodies")
	}
	// 1 MiB is left, for small bodies of other clients.
	for i, client := range []string{"c", "d"} {
		s := reservation{b: b, client: client}
		if !s.grow(500 << 10) {
			t.Errorf("small body %d from %s refused with %d bytes used of %d", i, client, b.used.Load(), max)
		}
		defer s.release()
	}
	for _, r := range []*reservation{&a1, &a2, &a3, &bb, &c1} {
		r.release()
	}
	if b.used.Load() != 2*(500<<10) {
		t.Fatalf("used %d, want the small bodies' %d", b.used.Load(), 2*(500<<10))
	}
}

// TestBudgetWaits: a body that does not fit waits for room until its
// reservation's deadline, and is granted when bytes are given back.
func TestBudgetWaits(t *testing.T) {
	b := &budget{max: 1 << 20}
	first := reservation{b: b, client: "a"}
	first.grow(1 << 20)
	second := reservation{b: b, client: "b", until: time.Now().Add(generous)}
	released := make(chan struct{})
	go func() {
		defer close(released)
		time.Sleep(50 * time.Millisecond)
		first.release()
	}()
	start := time.Now()
	if !second.grow(512 << 10) {
		t.Fatal("refused though room was made within its wait")
	}
	if time.Since(start) < 40*time.Millisecond {
		t.Error("granted before room was made")
	}
	second.release()
	<-released
	third := reservation{b: b, client: "c", until: time.Now().Add(50 * time.Millisecond)}
	first.grow(1 << 20)
	if third.grow(512 << 10) {
		t.Error("granted though no room was made")
	}
	first.release()
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

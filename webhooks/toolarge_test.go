package webhooks

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTooLargeBeforeBudgetWait: while the budget of unverified bodies is
// taken by slow bodies, a body past MaxBodyBytes is answered 413 at once —
// declared by its Content-Length, or sent chunked as it crosses the limit —
// instead of waiting (budgetWait, 5 s) for room and being answered 503. A
// declared body within the limit still waits for room, then is answered 503,
// which shows that the budget was full meanwhile.
func TestTooLargeBeforeBudgetWait(t *testing.T) {
	t.Parallel()
	h := newHostile(t, MiddlewareOptions{MaxUnverifiedBytes: 8 << 20, MinBodyRate: -1})

	// Two slow bodies of 2 MiB from two addresses: each sends a little more
	// than 1 MiB and stops, holding its whole length, 4 MiB of the 6 MiB that
	// large bodies may take.
	const slowLen = 2 << 20
	for i, ip := range []net.IP{net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)} {
		c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}).Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: push\r\n%s: slow-%d\r\n%s: sha256=00\r\n\r\n{",
			DefaultPath, slowLen, HeaderEvent, HeaderDelivery, i, HeaderSignature)
		if _, err := c.Write(bytes.Repeat([]byte(" "), 1<<20+1<<10)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(generous)
	for h.mw.unverified.Used() != 2*(slowLen+1) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow bodies hold %d bytes, want %d", h.mw.unverified.Used(), 2*(slowLen+1))
		}
		time.Sleep(time.Millisecond)
	}

	const huge = 26 << 20
	type answer struct {
		name string
		code int
		took time.Duration
		err  error
	}
	answers := make(chan answer, 3)
	send := func(name string, header string, body func(io.Writer) error) {
		start := time.Now()
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			answers <- answer{name: name, err: err}
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n%s: push\r\n%s: %s\r\n%s: sha256=00\r\n\r\n",
			DefaultPath, header, HeaderEvent, HeaderDelivery, name, HeaderSignature)
		if body != nil {
			go body(c) // fails once the server answers and closes
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answers <- answer{name: name, err: err}
			return
		}
		res.Body.Close()
		answers <- answer{name: name, code: res.StatusCode, took: time.Since(start)}
	}
	chunked := func(n int) func(io.Writer) error {
		return func(w io.Writer) error {
			chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", 1<<20, bytes.Repeat([]byte(" "), 1<<20)))
			for sent := 0; sent < n; sent += 1 << 20 {
				if _, err := w.Write(chunk); err != nil {
					return err
				}
			}
			_, err := io.WriteString(w, "0\r\n\r\n")
			return err
		}
	}
	go send("chunked-huge", "Transfer-Encoding: chunked", chunked(huge))
	go send("declared-huge", fmt.Sprintf("Content-Length: %d", huge), func(w io.Writer) error {
		_, err := w.Write(bytes.Repeat([]byte(" "), huge))
		return err
	})
	go send("declared-within", fmt.Sprintf("Content-Length: %d", 4<<20), func(w io.Writer) error {
		_, err := w.Write(bytes.Repeat([]byte(" "), 4<<20))
		return err
	})

	want := map[string]int{"chunked-huge": http.StatusRequestEntityTooLarge, "declared-huge": http.StatusRequestEntityTooLarge, "declared-within": http.StatusServiceUnavailable}
	for range want {
		var a answer
		select {
		case a = <-answers:
		case <-time.After(generous):
			t.Fatal("no answer")
		}
		if a.err != nil {
			t.Fatalf("%s: %v", a.name, a.err)
		}
		t.Logf("%s: %d after %v", a.name, a.code, a.took.Round(time.Millisecond))
		if a.code != want[a.name] {
			t.Errorf("%s: answered %d, want %d", a.name, a.code, want[a.name])
		}
		switch {
		case a.code == http.StatusRequestEntityTooLarge && a.took >= budgetWait/2:
			// Within 1 s on an idle machine (26 MiB over loopback); half the
			// budget wait leaves room for a loaded one while an answer that
			// waited for room could not come so early.
			t.Errorf("%s: 413 after %v, want well within the budget wait (%v)", a.name, a.took, budgetWait)
		case a.code == http.StatusServiceUnavailable && a.took < budgetWait:
			t.Errorf("%s: 503 after %v, before the budget wait (%v) ended", a.name, a.took, budgetWait)
		}
	}
	if !strings.Contains(h.logs.text(), "body too large") {
		t.Errorf("the 413s are not logged:\n%s", h.logs.text())
	}
}

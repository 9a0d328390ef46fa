package inspector_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
)

// stuckClient opens the event stream and never reads it.
func stuckClient(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(c, "GET /api/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", addr)
	t.Cleanup(func() { c.Close() })
	return c
}

func stats(t *testing.T, url string) map[string]int64 {
	t.Helper()
	resp, err := http.Get(url + "api/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st map[string]int64
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestFanOutStuckBrowsers feeds the inspector 50,000 deliveries (200 MB of
// payloads) as fast as OnResult can take them while stuck pages hold event
// streams open and read nothing, and one page reads. The publisher must never
// block (OnResult returns every time while the stuck pages still read
// nothing), every stuck page is dropped, the reading page sees rows, and the
// memory held stays bounded by the ring, not by what went through.
func TestFanOutStuckBrowsers(t *testing.T) {
	const stuck, n, payloadSize = 6, 50000, 4 << 10
	insp := inspector.New(inspector.Options{MaxRecords: 100})
	srv := httptest.NewServer(insp)
	t.Cleanup(func() { insp.Close(); srv.Close() })
	addr := srv.Listener.Addr().String()
	for range stuck {
		stuckClient(t, addr)
	}
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	var rows, dropped atomic.Int64
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			switch sc.Text() {
			case "event: row":
				rows.Add(1)
			case "event: dropped":
				dropped.Add(1)
			}
		}
	}()
	for stats(t, srv.URL+"/")["clients"] < stuck+1 {
		time.Sleep(10 * time.Millisecond)
	}

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	payload := []byte(`{"action":"opened","repository":{"full_name":"o/r"},"sender":{"login":"u"},"pad":"` + strings.Repeat("x", payloadSize) + `"}`)
	header := http.Header{"Content-Type": {"application/json"}}
	for i := range n {
		insp.OnResult(webhooks.Result{
			ID: fmt.Sprint("id-", i), Name: "issues", Action: "opened", Status: 200, Verified: true,
			Header: header, Payload: payload, ReceivedAt: time.Now(), Duration: time.Microsecond,
		})
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)

	st := stats(t, srv.URL+"/")
	t.Logf("%d deliveries published to %d stuck pages and 1 reading page: %d pages dropped, the reader got %d rows; ring %d records, %d bytes; heap in use %d → %d KiB",
		n, stuck, st["dropped"], rows.Load(), st["records"], st["bytes"], before.HeapInuse>>10, after.HeapInuse>>10)
	if st["dropped"] < stuck {
		t.Errorf("%d pages dropped, want at least the %d stuck ones", st["dropped"], stuck)
	}
	if st["records"] != 100 {
		t.Errorf("the ring holds %d records, want its bound 100", st["records"])
	}
	if rows.Load() == 0 {
		t.Error("the reading page got no row")
	}
	// What stays: the ring (100 × 4 KiB) and each page's buffer of rows; not
	// the 200 MB that went through.
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 32<<20 {
		t.Errorf("heap in use grew by %d MiB", grew>>20)
	}
	insp.Close()
	<-readerDone
}

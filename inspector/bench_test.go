package inspector_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
)

// BenchmarkOnResult is the receiver's cost of the inspector per delivery: the
// ring, the row for the live pages, and the fan-out to them, with no page,
// with one page reading the stream, and with that one and 4 pages that never
// read (dropped once their buffer fills). The target is far under 1 ms per
// delivery, for 1,000 deliveries/s. "dropped" counts the pages dropped.
func BenchmarkOnResult(b *testing.B) {
	for _, tc := range []struct{ reading, stuck int }{{0, 0}, {1, 0}, {1, 4}} {
		b.Run(fmt.Sprintf("reading=%d,stuck=%d", tc.reading, tc.stuck), func(b *testing.B) {
			insp := inspector.New(inspector.Options{MaxRecords: 1000})
			srv := httptest.NewServer(insp)
			defer func() { insp.Close(); srv.Close() }()
			var conns []net.Conn
			connect := func() {
				c, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				fmt.Fprintf(c, "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
				conns = append(conns, c)
			}
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range tc.stuck {
				connect()
			}
			for range tc.reading {
				resp, err := http.Get(srv.URL + "/api/events")
				if err != nil {
					b.Fatal(err)
				}
				go func() { io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
			}
			for statsOf(b, srv.URL)["clients"] < int64(tc.reading+tc.stuck) {
				time.Sleep(time.Millisecond)
			}
			payload := []byte(`{"action":"opened","repository":{"full_name":"o/r"},"sender":{"login":"u"},"pad":"` + strings.Repeat("x", 7000) + `"}`)
			res := webhooks.Result{Name: "issues", Action: "opened", Status: 200, Verified: true,
				Header: http.Header{"Content-Type": {"application/json"}}, Payload: payload, ReceivedAt: time.Now()}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				res.ID = fmt.Sprint(i)
				insp.OnResult(res)
			}
			b.StopTimer()
			b.ReportMetric(float64(insp.Dropped()), "dropped")
		})
	}
}

func statsOf(b *testing.B, url string) map[string]int64 {
	resp, err := http.Get(url + "/api/stats")
	if err != nil {
		b.Fatal(err)
	}
	var st map[string]int64
	decodeJSON(b, resp, &st)
	return st
}

package webhooks_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/webhooks"
)

func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		p, err := webhooks.ParsePrefix(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestSourceFilterClient: X-Forwarded-For counts only from a trusted proxy,
// and then its right-most untrusted hop is the client.
func TestSourceFilterClient(t *testing.T) {
	f := webhooks.NewSourceFilter(webhooks.SourceFilterOptions{TrustedProxies: prefixes(t, "10.0.0.0/8", "::1")})
	f.Set(prefixes(t, "192.0.2.0/24", "2001:db8::/32"))
	for _, tc := range []struct {
		remote, xff string
		want        string
		allowed     bool
	}{
		{"192.0.2.7:1234", "", "192.0.2.7", true},
		{"198.51.100.1:1234", "192.0.2.7", "198.51.100.1", false}, // not a proxy: its header is ignored
		{"10.1.2.3:80", "192.0.2.9", "192.0.2.9", true},
		{"10.1.2.3:80", "198.51.100.1, 192.0.2.9, 10.9.9.9", "192.0.2.9", true},
		{"10.1.2.3:80", "192.0.2.9, 198.51.100.1", "198.51.100.1", false}, // the left one is the sender's own claim
		{"[::1]:80", "2001:db8::5", "2001:db8::5", true},
		{"10.1.2.3:80", "", "10.1.2.3", false},
		{"10.1.2.3:80", "not-an-address", "", false},
		{"[::ffff:192.0.2.3]:1", "", "192.0.2.3", true},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		addr, ok := f.Client(r)
		if got := ""; ok {
			got = addr.String()
			if got != tc.want {
				t.Errorf("%s %q: client %s, want %s", tc.remote, tc.xff, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s %q: no client, want %s", tc.remote, tc.xff, tc.want)
		}
		if f.Allowed(r) != tc.allowed {
			t.Errorf("%s %q: allowed %v", tc.remote, tc.xff, !tc.allowed)
		}
	}
}

func TestParseMetaHooks(t *testing.T) {
	rs, err := webhooks.ParseMetaHooks([]byte(`{"hooks":["192.30.252.0/22","2a0a:a440::/29","203.0.113.5"],"web":["1.2.3.4/32"]}`))
	if err != nil || len(rs) != 3 || rs[2].String() != "203.0.113.5/32" {
		t.Fatalf("%v %v", rs, err)
	}
	for _, bad := range []string{`{}`, `{"hooks":[]}`, `{"hooks":["x"]}`, `[`, `{"hooks":"1.2.3.4"}`} {
		if _, err := webhooks.ParseMetaHooks([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestSourceFilterOverHTTP: from outside the ranges, 403 before the body is
// read (the body is never sent); inside, the handler. A refresh that fails
// keeps the ranges.
func TestSourceFilterOverHTTP(t *testing.T) {
	var metaUp atomic.Bool
	var metaBody atomic.Pointer[string]
	outside := `{"hooks":["192.0.2.0/24"]}`
	metaBody.Store(&outside)
	metaUp.Store(true)
	meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/meta" || !metaUp.Load() {
			http.Error(w, "down", 500)
			return
		}
		w.Write([]byte(*metaBody.Load()))
	}))
	defer meta.Close()
	f := webhooks.NewSourceFilter(webhooks.SourceFilterOptions{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := f.Refresh(ctx, 20*time.Millisecond, func(ctx context.Context) ([]netip.Prefix, error) {
		return webhooks.FetchMetaHooks(ctx, meta.Client(), meta.URL)
	}); err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int32
	srv := httptest.NewServer(f.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(202)
	})))
	defer srv.Close()

	// Headers announcing a body that never comes: the answer does not wait.
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte("POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	if resp.StatusCode != 403 || !resp.Close {
		t.Fatalf("outside: %d %v", resp.StatusCode, resp.Header)
	}

	inside := `{"hooks":["127.0.0.0/8","::1/128"]}`
	metaBody.Store(&inside)
	waitTrue(t, func() bool {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode == 202
	})
	metaUp.Store(false)
	time.Sleep(100 * time.Millisecond) // several refreshes fail
	resp, err = http.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 || len(f.Ranges()) != 2 {
		t.Errorf("with the forge unreachable: %d, ranges %v; want the last ones kept", resp.StatusCode, f.Ranges())
	}
}

func waitTrue(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

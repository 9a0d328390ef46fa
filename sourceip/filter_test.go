package sourceip_test

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

	"forgehooks.dev/forgehooks/sourceip"
)

func prefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		p, err := sourceip.ParsePrefix(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestFilterClient: X-Forwarded-For counts only from a trusted proxy, and
// then its right-most untrusted hop is the client; an IPv4-mapped address,
// as a peer, a hop or a range, is its IPv4 address.
func TestFilterClient(t *testing.T) {
	t.Parallel()
	f := sourceip.New(sourceip.Options{TrustedProxies: prefixes(t, "10.0.0.0/8", "::1")})
	f.Set(prefixes(t, "192.0.2.0/24", "2001:db8::/32", "::ffff:203.0.113.0/125"))
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
		{"[::ffff:10.1.2.3]:80", "192.0.2.9", "192.0.2.9", true},   // a mapped peer is a trusted proxy
		{"10.1.2.3:80", "::ffff:192.0.2.9", "192.0.2.9", true},     // a mapped hop
		{"10.1.2.3:80", "::ffff:203.0.113.7", "203.0.113.7", true}, // in a range given mapped
		{"[::ffff:203.0.113.6]:80", "", "203.0.113.6", true},       // the same, as the peer
		{"203.0.113.9:80", "", "203.0.113.9", false},               // outside the mapped /125
		{"[fe80::1%eth0]:80", "", "fe80::1%eth0", false},
		{"[2001:db8::1%eth0]:80", "", "2001:db8::1%eth0", true}, // a zone names an interface, not an address
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

// TestFilterOverHTTP: from outside the ranges, 403 before the body is read
// (the body is never sent); inside, the handler. A refresh that fails keeps
// the ranges.
func TestFilterOverHTTP(t *testing.T) {
	t.Parallel()
	var metaUp atomic.Bool
	var downAnswers atomic.Int32
	var metaBody atomic.Pointer[string]
	outside := `{"hooks":["192.0.2.0/24"]}`
	metaBody.Store(&outside)
	metaUp.Store(true)
	meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/meta" || !metaUp.Load() {
			downAnswers.Add(1)
			http.Error(w, "down", 500)
			return
		}
		w.Write([]byte(*metaBody.Load()))
	}))
	defer meta.Close()
	f := sourceip.New(sourceip.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := f.Refresh(ctx, 20*time.Millisecond, func(ctx context.Context) ([]netip.Prefix, error) {
		return (&sourceip.Meta{APIURL: meta.URL, Client: meta.Client()}).Fetch(ctx)
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
	waitTrue(t, func() bool { return downAnswers.Load() >= 3 }) // several refreshes fail
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

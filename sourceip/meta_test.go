package sourceip_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/sourceip"
)

func strs(ps []netip.Prefix) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// TestParseMetaHooks: ranges and single addresses are read, IPv4-mapped ones
// as IPv4; a range wider than /8 (IPv4) or /24 (IPv6), or an IPv6 range that
// holds every IPv4-mapped address, is refused and returned apart.
func TestParseMetaHooks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		hooks         string
		want, refused []string
		err           bool
	}{
		{"forge's own", `["192.30.252.0/22","2a0a:a440::/29","203.0.113.5","2001:db8::1"]`, nil, nil, false},
		{"masked", `["192.0.2.77/24"," 2001:db8::7/32 "]`, []string{"192.0.2.0/24", "2001:db8::/32"}, nil, false},
		{"mapped", `["::ffff:192.0.2.0/120","::ffff:203.0.113.9"]`, []string{"192.0.2.0/24", "203.0.113.9/32"}, nil, false},
		{"widest allowed", `["10.0.0.0/8","2001:d00::/24"]`, []string{"10.0.0.0/8", "2001:d00::/24"}, nil, false},
		{"everyone", `["192.0.2.0/24","0.0.0.0/0"]`, []string{"192.0.2.0/24"}, []string{"0.0.0.0/0"}, false},
		{"/7 and /23", `["192.0.2.0/24","10.0.0.0/7","2001::/23"]`, []string{"192.0.2.0/24"}, []string{"10.0.0.0/7", "2001::/23"}, false},
		{"every IPv6", `["::/0","192.0.2.0/24"]`, []string{"192.0.2.0/24"}, []string{"::/0"}, false},
		{"every IPv4, mapped", `["::ffff:0.0.0.0/96","::ffff:0:0/95","192.0.2.0/24"]`, []string{"192.0.2.0/24"}, []string{"0.0.0.0/0", "::fffe:0:0/95"}, false},
		{"holds the mapped space", `["::/64","192.0.2.0/24"]`, []string{"192.0.2.0/24"}, []string{"::/64"}, false},
		{"mapped /103", `["::ffff:10.0.0.0/103"]`, nil, []string{"10.0.0.0/7"}, true},
		{"only wide ones", `["0.0.0.0/0","::/0"]`, nil, []string{"0.0.0.0/0", "::/0"}, true},
		{"empty", `[]`, nil, nil, true},
		{"not a range", `["x"]`, nil, nil, true},
		{"a zone", `["fe80::1%eth0"]`, nil, nil, true},
		{"a zone in a CIDR", `["fe80::1%eth0/64"]`, nil, nil, true},
		{"not a list", `"1.2.3.4"`, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(`{"hooks":` + tc.hooks + `,"web":["0.0.0.0/0"]}`)
			rs, refused, err := sourceip.ParseMetaHooks(body)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if tc.want != nil && !slices.Equal(strs(rs), tc.want) {
				t.Errorf("ranges %v, want %v", strs(rs), tc.want)
			}
			if tc.want == nil && !tc.err && len(rs) != strings.Count(tc.hooks, ",")+1 {
				t.Errorf("ranges %v", strs(rs))
			}
			if !slices.Equal(strs(refused), append([]string{}, tc.refused...)) {
				t.Errorf("refused %v, want %v", strs(refused), tc.refused)
			}
		})
	}
	for _, bad := range []string{`{}`, `[`, `{"hooks":null}`} {
		if _, _, err := sourceip.ParseMetaHooks([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestMetaFetchRefusesWide: an answer holding 0.0.0.0/0 allows no one more
// than its other ranges, and the log says which range was refused; an answer
// of wide ranges only fails, so Refresh keeps the ranges set last.
func TestMetaFetchRefusesWide(t *testing.T) {
	t.Parallel()
	answer := `{"hooks":["0.0.0.0/0","192.0.2.0/24","::/0"]}`
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(answer))
	}))
	defer api.Close()
	var logs bytes.Buffer
	m := &sourceip.Meta{APIURL: api.URL + "/", Client: api.Client(), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	rs, err := m.Fetch(context.Background())
	if err != nil || !slices.Equal(strs(rs), []string{"192.0.2.0/24"}) {
		t.Fatalf("%v %v", strs(rs), err)
	}
	line := logs.String()
	for _, want := range []string{"level=WARN", "/meta ranges refused: wider than /8 (IPv4) or /24 (IPv6)", "refused=2", `first=0.0.0.0/0,::/0`, "kept=1"} {
		if !strings.Contains(line, want) {
			t.Errorf("log lacks %q:\n%s", want, line)
		}
	}
	f := sourceip.New(sourceip.Options{Logger: slog.New(slog.DiscardHandler)})
	f.Set(rs)
	r := httptest.NewRequest("POST", "/", nil)
	r.RemoteAddr = "198.51.100.1:1"
	if f.Allowed(r) {
		t.Error("an address outside the kept ranges allowed")
	}

	answer = `{"hooks":["0.0.0.0/0"]}`
	logs.Reset()
	if rs, err := m.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "wider than") {
		t.Errorf("only a wide range: %v %v", strs(rs), err)
	}
	if !strings.Contains(logs.String(), "refused=1") {
		t.Errorf("log: %s", logs.String())
	}
}

// TestMetaFetchBounds: an answer other than 200, or over MaxMetaBytes, fails.
func TestMetaFetchBounds(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big/meta":
			w.Write([]byte(`{"hooks":["192.0.2.0/24"],"x":"`))
			w.Write(bytes.Repeat([]byte("a"), sourceip.MaxMetaBytes))
			w.Write([]byte(`"}`))
		case "/ok/meta":
			w.Write([]byte(`{"hooks":["192.0.2.0/24"]}`))
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer api.Close()
	for _, tc := range []struct {
		path, err string
	}{
		{"/ok", ""},
		{"/big", "larger than"},
		{"/none", "404"},
	} {
		_, err := (&sourceip.Meta{APIURL: api.URL + tc.path}).Fetch(context.Background())
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.err)
		}
	}
}

package inbox

import (
	"net/url"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/inbox/internal/natsconn"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://u:p@h:4222", "nats://redacted@h:4222"},
		{"tls://tok@h", "tls://redacted@h"},
		{"u:p@h:4222", "redacted@h:4222"},
		{"nats://u:p@a:1,nats://b:2,nats://v:w@c:3", "nats://redacted@a:1,nats://b:2,nats://redacted@c:3"},
		{"nats://u:p@x@h", "nats://redacted@h"},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNATSAuthOptions: the URLs lose their userinfo, which becomes the
// connection's user; conflicting or incomplete settings are refused with
// errors that never contain the password.
func TestNATSAuthOptions(t *testing.T) {
	const pass = "pw-7d1e"
	for _, tc := range []struct {
		name    string
		a       NATSAuth
		urls    []string
		want    []string // the URLs connected to
		nopts   int
		wantErr string
	}{
		{"none", NATSAuth{}, []string{"nats://h:1"}, []string{"nats://h:1"}, 0, ""},
		{"url user", NATSAuth{}, []string{"nats://u:" + pass + "@h:1", "nats://h:2"}, []string{"nats://h:1", "nats://h:2"}, 1, ""},
		{"url without scheme", NATSAuth{}, []string{"u:" + pass + "@h:1"}, []string{"nats://h:1"}, 1, ""},
		{"url token", NATSAuth{}, []string{"nats://tok@h:1"}, []string{"nats://h:1"}, 1, ""},
		{"user", NATSAuth{User: "u", Password: pass}, []string{"nats://h:1"}, []string{"nats://h:1"}, 1, ""},
		{"two users in urls", NATSAuth{}, []string{"nats://u:" + pass + "@h:1", "nats://v:" + pass + "@h:2"}, nil, 0, "different users"},
		{"url and user", NATSAuth{User: "u"}, []string{"nats://u:" + pass + "@h:1"}, nil, 0, "carries a user"},
		{"creds and nkey", NATSAuth{CredsFile: "a", NkeyFile: "b"}, []string{"nats://h:1"}, nil, 0, "give one"},
		{"password alone", NATSAuth{Password: pass}, []string{"nats://h:1"}, nil, 0, "without a user"},
		{"missing creds", NATSAuth{CredsFile: "/nonexistent/x.creds"}, []string{"nats://h:1"}, nil, 0, "x.creds"},
		{"missing nkey", NATSAuth{NkeyFile: "/nonexistent/x.nk"}, []string{"nats://h:1"}, nil, 0, "x.nk"},
		{"cert without key", NATSAuth{TLSCert: "c.pem"}, []string{"nats://h:1"}, nil, 0, "needs its key"},
		{"missing ca", NATSAuth{TLSCA: "/nonexistent/ca.pem"}, []string{"nats://h:1"}, nil, 0, "ca.pem"},
		{"bad url", NATSAuth{}, []string{"nats://u:" + pass + "@[::1"}, nil, 0, "does not parse"},
	} {
		urls, opts, err := tc.a.natsOptions(tc.urls)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), pass) {
				t.Errorf("%s: error prints the password: %v", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if strings.Join(urls, ",") != strings.Join(tc.want, ",") || len(opts) != tc.nopts {
			t.Errorf("%s: urls %q and %d options, want %q and %d", tc.name, urls, len(opts), tc.want, tc.nopts)
		}
	}
}

// FuzzRedactURL: whatever the input, every '@' left in RedactURL's output
// follows "redacted" (no userinfo survives), and splitUserinfo's URLs
// carry no userinfo.
func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"nats://u:p@h:4222", "u:p@h", "nats://a:1,tls://t@b:2", "nats://u:p@x@h", "@", "nats://%zz@h", "nats://h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, part := range strings.Split(RedactURL(s), ",") {
			if before, _, ok := strings.Cut(part, "@"); ok && (!strings.HasSuffix(before, "redacted") || strings.Count(part, "@") != 1) {
				t.Fatalf("RedactURL(%q) leaves %q", s, part)
			}
		}
		clean, _, _, _, err := natsconn.SplitUserinfo(strings.Split(s, ","))
		if err != nil {
			return
		}
		for _, c := range clean {
			if u, err := url.Parse(c); err == nil && u.User != nil {
				t.Fatalf("splitUserinfo(%q) keeps the userinfo of %q", s, c)
			}
		}
	})
}

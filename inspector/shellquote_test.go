package inspector_test

import (
	"os/exec"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/inspector"
)

var quoteCases = []struct{ in, want string }{
	{"", "''"},
	{"plain", "'plain'"},
	{"it's", `'it'\''s'`},
	{"$(rm -rf /) `x` ;|&", "'$(rm -rf /) `x` ;|&'"},
	{"a\nb", `$'a\x0ab'`},
	{"esc\x1b[31m", `$'esc\x1b[31m'`},
	{"rtl\u202Eevil", `$'rtl\xe2\x80\xaeevil'`},
	{"q'\\\x01", `$'q\'\\\x01'`},
	{"bad\xffutf8", `$'bad\xffutf8'`},
	{"unicode é ✓", "'unicode é ✓'"},
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range quoteCases {
		if got := inspector.ShellQuote(tc.in); got != tc.want {
			t.Errorf("ShellQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// bashEcho has bash print the word q stands for.
func bashEcho(t testing.TB, q string) (string, bool) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return "", false
	}
	out, err := exec.Command(bash, "-c", "printf %s "+q).Output()
	if err != nil {
		t.Fatalf("bash -c 'printf %%s %s': %v", q, err)
	}
	return string(out), true
}

// FuzzShellQuote checks that bash reads a quoted string back as exactly the
// string: the commands the page shows reproduce a delivery's id and event
// whatever they hold.
func FuzzShellQuote(f *testing.F) {
	for _, tc := range quoteCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return // no argument of a process can hold NUL
		}
		q := inspector.ShellQuote(s)
		got, ok := bashEcho(t, q)
		if !ok {
			t.Skip("no bash")
		}
		if got != s {
			t.Fatalf("ShellQuote(%q) = %s, which bash reads as %q", s, q, got)
		}
	})
}

func TestCommands(t *testing.T) {
	t.Parallel()
	send, curl := inspector.Commands("http://127.0.0.1:3000/api/forge/webhooks", "issues", "id'1")
	if send != `forgehooks send --url 'http://127.0.0.1:3000/api/forge/webhooks' --event 'issues' --delivery 'id'\''1' payload.json` {
		t.Errorf("send: %s", send)
	}
	for _, want := range []string{"curl -sS 'http://127.0.0.1:3000/api/forge/webhooks'", `-H 'X-Forge-Event: issues'`, `-H 'X-Forge-Delivery: id'\''1'`, `-H "X-Hub-Signature-256: $(forgehooks sign payload.json)"`, "--data-binary @payload.json"} {
		if !strings.Contains(curl, want) {
			t.Errorf("curl %s lacks %s", curl, want)
		}
	}
}

package stored

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestTokensAndKeys: the token and status key of a stored message, for the
// layouts the inbox writes and reads.
func TestTokensAndKeys(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 97)
	for _, tc := range []struct {
		name            string
		tenant, id      string
		subject, hdrKey string
		seq             uint64
		wantToken       string
		wantKey         string
	}{
		{"an id", "", "abc", "N.in.q", "", 5, "iYWJj", "iYWJj"},
		{"a tenant's id", "acme", "abc", "N.in.p3.q", "", 5, SubjectToken("acme/abc"), SubjectToken("acme/abc")},
		{"no id: its first sequence", "", "", "N.in.q", "", 5, "n", "s5"},
		{"a long id: its digest", "", long, "N.in.q", "", 5, SubjectToken(long), SubjectToken(long)},
		{"a subject per delivery", "", "ignored", "N.in.iYWJj", "", 5, "iYWJj", "iYWJj"},
		{"stored again: the key it names", "", "abc", "N.in.q", "iZZZ", 9, "iYWJj", "iZZZ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := nats.Header{}
			h.Set(HeaderDelivery, tc.id)
			h.Set(HeaderTenant, tc.tenant)
			if tc.hdrKey != "" {
				h.Set(HeaderKey, tc.hdrKey)
			}
			token := TokenOf(h, tc.subject)
			if token != tc.wantToken {
				t.Errorf("TokenOf = %q, want %q", token, tc.wantToken)
			}
			if key := StatusKey(h, token, tc.seq); key != tc.wantKey {
				t.Errorf("StatusKey = %q, want %q", key, tc.wantKey)
			}
		})
	}
	if got := SubjectToken(long); !strings.HasPrefix(got, "h") || len(got) != 65 {
		t.Errorf("SubjectToken of a long id: %q", got)
	}
}

// TestSubjectTokenOfShortIDs: an id of up to 96 bytes is "i" and its
// base64url, whatever its bytes and length (the tokens of stored deliveries
// and records, which must never change).
func TestSubjectTokenOfShortIDs(t *testing.T) {
	t.Parallel()
	for _, id := range []string{
		"x", "ab", "abc", "72d4d1a0-2b3c-11f0-8a4b-0e1f5c0a9d21", "acme/\x00\xff/é",
		strings.Repeat("y", 95), strings.Repeat("z", 96),
	} {
		want := "i" + base64.RawURLEncoding.EncodeToString([]byte(id))
		if got := SubjectToken(id); got != want {
			t.Errorf("SubjectToken(%q) = %q, want %q", id, got, want)
		}
	}
	if got := SubjectToken("abc"); got != "iYWJj" {
		t.Errorf(`SubjectToken("abc") = %q, want "iYWJj"`, got)
	}
}

// TestPartitionTokens: only what PartitionToken writes is a partition's
// token.
func TestPartitionTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tok  string
		want bool
	}{{PartitionToken(0), true}, {PartitionToken(15), true}, {"p", false}, {"p01", false}, {"p-1", false}, {"q", false}, {"i0", false}, {"p+1", false}} {
		if got := ValidPartitionToken(tc.tok); got != tc.want {
			t.Errorf("ValidPartitionToken(%q) = %v, want %v", tc.tok, got, tc.want)
		}
	}
}

// TestHeadersRoundTrip: a request's headers are stored without those a
// sender must not set, and handed back so; the delivery a stored message
// holds has what the forge would have sent, even when stored without the
// request's headers.
func TestHeadersRoundTrip(t *testing.T) {
	t.Parallel()
	req := http.Header{"X-Request-Id": {"r"}, "Forgehooks-Tenant": {"evil"}, "Nats-Msg-Id": {"x"}, "Content-Length": {"2"}, "Connection": {"close"}}
	h := RequestHeader(req)
	for _, k := range []string{"Forgehooks-Tenant", "Nats-Msg-Id", "Content-Length", "Connection"} {
		if h.Get(k) != "" {
			t.Errorf("%s stored", k)
		}
	}
	received := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	h.Set(HeaderDelivery, "d")
	h.Set(HeaderEvent, "issues")
	h.Set(HeaderSignature, "sha256=ab")
	h.Set(HeaderTenant, "acme")
	h.Set(HeaderReceivedAt, received.Format(time.RFC3339Nano))
	d := Delivery(h, []byte(`{}`), 4)
	if d.ID != "d" || d.Name != "issues" || d.Signature != "sha256=ab" || d.Tenant != "acme" || d.Attempt != 4 || !d.ReceivedAt.Equal(received) || string(d.Payload) != "{}" {
		t.Errorf("Delivery = %+v", d)
	}
	for k, want := range map[string]string{"X-Request-Id": "r", webhooks.HeaderEvent: "issues", webhooks.HeaderDelivery: "d", webhooks.HeaderSignature: "sha256=ab"} {
		if got := d.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if d.Header.Get(HeaderTenant) != "" {
		t.Error("the inbox's own header handed to the handlers")
	}
}

// TestStatusAttemptsBounded: a status keeps the last MaxAttemptsKept
// attempts and survives its encoding.
func TestStatusAttemptsBounded(t *testing.T) {
	t.Parallel()
	st := &Status{Seq: 3, Status: delivery.StatusRetrying}
	if st.Last() != 0 || (*Status)(nil).Last() != 0 {
		t.Fatal("Last of no attempt")
	}
	for i := 1; i <= MaxAttemptsKept+5; i++ {
		st.Add(delivery.Attempt{Number: i})
	}
	if len(st.Attempts) != MaxAttemptsKept || st.Attempts[0].Number != 6 || st.Last() != MaxAttemptsKept+5 {
		t.Errorf("kept %d attempts from #%d to #%d", len(st.Attempts), st.Attempts[0].Number, st.Last())
	}
	got := ParseStatus(st.Marshal())
	if got == nil || got.Seq != 3 || got.Status != delivery.StatusRetrying || got.Last() != st.Last() {
		t.Errorf("round trip: %+v", got)
	}
	if st.Settled(3) {
		t.Error("a retrying status settles its copy")
	}
	st.Status = delivery.StatusDead
	if !st.Settled(3) || st.Settled(4) {
		t.Error("a dead status settles its own copy only")
	}
}

// FuzzParseStatus: any stored value is parsed without a panic, a status is
// never refused, and one that parses encodes to a value that parses to the
// same status.
func FuzzParseStatus(f *testing.F) {
	f.Add([]byte(`{"seq":1,"status":"handled","attempts":[{"number":1}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, v []byte) {
		st := ParseStatus(v)
		if st == nil {
			var s Status
			if json.Unmarshal(v, &s) == nil {
				t.Fatalf("a status not parsed: %q", v)
			}
			return
		}
		again := ParseStatus(st.Marshal())
		if again == nil || again.Seq != st.Seq || again.Status != st.Status || len(again.Attempts) != len(st.Attempts) {
			t.Fatalf("%q: parsed %+v, again %+v", v, st, again)
		}
	})
}

func TestInternalHeader(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"Nats-Msg-Id": true, "NATS-EXPECTED-STREAM": true, "nats-": true, "Forgehooks-Seal": true, "FORGEHOOKS-x": true,
		"Nats": false, "Natsy-X": false, "X-Nats-Msg-Id": false, "Forgehooks": false, "Forgehook-X": false, "": false, "X-Forge-Event": false,
	} {
		if got := InternalHeader(name); got != want {
			t.Errorf("InternalHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestIngestAction: the intake's action is taken from a stored message
// only when SetMeta marked it exact and the body is the one it measured;
// a message stored before the mark (or without a size) is scanned.
func TestIngestAction(t *testing.T) {
	t.Parallel()
	body := []byte(`{"action":"opened"}`)
	meta := func(action string, size int) nats.Header {
		h := nats.Header{}
		SetMeta(h.Set, action, "o/r", "s", size)
		return h
	}
	old := meta("opened", len(body))
	old.Del(HeaderExactAction)
	tests := []struct {
		name   string
		h      nats.Header
		action string
		ok     bool
	}{
		{"exact", meta("opened", len(body)), "opened", true},
		{"no action", meta("", len(body)), "", true},
		{"escapes decoded", meta("é\t\"x", len(body)), "é\t\"x", true},
		{"another size", meta("opened", len(body)+1), "", false},
		{"stored before the mark", old, "", false},
		{"no headers", nats.Header{}, "", false},
		{"clipped", meta(strings.Repeat("a", 300), len(body)), "", false},
		{"a blank at the end", meta("opened ", len(body)), "", false},
		{"a blank at the start", meta(" opened", len(body)), "", false},
		{"a line break", meta("open\ned", len(body)), "", false},
		{"invalid UTF-8", meta("op\xffened", len(body)), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			action, ok := IngestAction(tt.h, body)
			if action != tt.action || ok != tt.ok {
				t.Errorf("IngestAction = %q, %v; want %q, %v", action, ok, tt.action, tt.ok)
			}
		})
	}
}

// TestCarried: a header value as NATS carries it, byte for byte (invalid
// UTF-8 kept).
func TestCarried(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"opened":          "opened",
		"":                "",
		" \t opened \r\n": "opened",
		"a\r\nb":          "a  b",
		"\na\nb\n":        "a b",
		"x\xff\ny":        "x\xff y",
		"é":               "é",
	} {
		if got := Carried(in); got != want {
			t.Errorf("Carried(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzIngestAction: whatever the action the intake found, a message whose
// headers went through NATS (each value as Carried makes it) yields either
// that very action from IngestAction, or no answer (the worker scans).
func FuzzIngestAction(f *testing.F) {
	for _, s := range []string{"opened", "", " opened", "opened ", "a\nb", "\r\n", strings.Repeat("x", 300), "\xff", "ünï"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, action string) {
		const size = 42
		h := nats.Header{}
		SetMeta(h.Set, action, "o/r", "s", size)
		carried := nats.Header{}
		for k, vs := range h {
			for _, v := range vs {
				carried.Add(k, Carried(v))
			}
		}
		got, ok := IngestAction(carried, make([]byte, size))
		if ok && got != action {
			t.Fatalf("IngestAction gave %q for the action %q", got, action)
		}
		if _, ok := IngestAction(carried, make([]byte, size+1)); ok {
			t.Fatal("IngestAction trusted a body of another size")
		}
	})
}

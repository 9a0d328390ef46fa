package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/internal/sse"
	"github.com/google/go-cmp/cmp"
)

// testTimeout bounds every network wait of a test (a subscription's whole
// stream), so that a broken proxy fails the test instead of hanging it. It is
// no speed target: generous, so that a loaded machine (-race, a second test
// suite beside this one: TestSlowSubscriberDoesNotBlock took 15-20 s there)
// does not fail a proxy that works.
const testTimeout = 2 * time.Minute

func TestEncodeMessage(t *testing.T) {
	pretty := "{\n  \"a\": \"x <&> y\",\r\n  \"n\": 1.50\n}"
	tests := []struct {
		name     string
		body     string
		wantBody string // the raw JSON of "body"
	}{
		{"compact JSON kept byte for byte", `{"a":"<&>","n":1.50,"u":"\u00e9"}`, `{"a":"<&>","n":1.50,"u":"\u00e9"}`},
		{"spaces without line ends kept", `{ "a" : 1 }`, `{ "a" : 1 }`},
		{"pretty JSON compacted to one line", pretty, `{"a":"x <&> y","n":1.50}`},
		{"not JSON becomes a string", "payload=%7B%7D", `"payload=%7B%7D"`},
		{"empty body is an empty object", "", `{}`},
		{"text with quotes and line ends", "a=\"1\"\r\nb\t\\", `"a=\"1\"\r\nb\t\\"`},
		{"binary is an empty object", "\x00\x01\x02", `{}`},
		{"invalid UTF-8 is an empty object", "caf\xe9", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://proxy.test/ch?ref=main&x=1&x=2", strings.NewReader(tt.body))
			r.Header.Set("X-Forge-Event", "push")
			r.Header.Set("Connection", "keep-alive, X-Hop")
			r.Header.Set("X-Hop", "dropped: listed in Connection")
			r.Header.Set("Keep-Alive", "timeout=5")
			r.Header.Set("Body", "dropped: a member of the message")
			r.Header["Accept"] = []string{"a", "b"}
			data := encodeMessage(r, []byte(tt.body), time.UnixMilli(1700000000123))
			if bytes.ContainsAny(data, "\r\n") {
				t.Fatalf("message is not one line: %q", data)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("message is not a JSON object: %v\n%s", err, data)
			}
			if got := string(m["body"]); got != tt.wantBody {
				t.Errorf("body = %s, want %s", got, tt.wantBody)
			}
			var b64 string
			json.Unmarshal(m["bodyB"], &b64)
			if raw, err := base64.StdEncoding.DecodeString(b64); err != nil || string(raw) != tt.body {
				t.Errorf("bodyB decodes to %q, %v; want the body as sent", raw, err)
			}
			wantKeys := []string{"accept", "body", "bodyB", "content-length", "host", "query", "timestamp", "x-forge-event"}
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			if diff := cmp.Diff(wantKeys, keys, cmpSorted); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			for k, want := range map[string]string{
				"accept": `"a, b"`, "host": `"proxy.test"`, "x-forge-event": `"push"`,
				"content-length": fmt.Sprintf("%q", fmt.Sprint(len(tt.body))),
				"query":          `{"ref":"main","x":["1","2"]}`, "timestamp": `1700000000123`,
			} {
				if got := string(m[k]); got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
		})
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func newTestServer(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(p) // listens on 127.0.0.1
	t.Cleanup(func() {
		p.Close()
		ts.Close()
	})
	return p, ts
}

// stream is a subscription read with the sse package.
type stream struct {
	t      *testing.T
	rd     *sse.Reader
	cancel context.CancelFunc
	resp   *http.Response
}

func subscribe(t *testing.T, url, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		cancel()
		t.Fatalf("subscribe: %s %q", resp.Status, ct)
	}
	s := &stream{t: t, rd: sse.NewReader(resp.Body, sse.Options{LastEventID: lastID}), cancel: cancel, resp: resp}
	t.Cleanup(s.close)
	return s
}

func (s *stream) close() { s.cancel(); s.resp.Body.Close() }

func (s *stream) next() sse.Event {
	s.t.Helper()
	e, err := s.rd.Next()
	if err != nil {
		s.t.Fatalf("reading the stream: %v", err)
	}
	return e
}

// ready reads the ready event and returns the replay count it announces.
func (s *stream) ready() int {
	s.t.Helper()
	e := s.next()
	if e.Type != "ready" {
		s.t.Fatalf("first event is %q %q, want ready", e.Type, e.Data)
	}
	var r struct{ Replay int }
	json.Unmarshal(e.Data, &r)
	return r.Replay
}

// message reads a message event and returns its body (from bodyB) and id.
func (s *stream) message() (body, id string) {
	s.t.Helper()
	e := s.next()
	if e.Type != "message" {
		s.t.Fatalf("event is %q %q, want message", e.Type, e.Data)
	}
	var m struct{ BodyB []byte }
	if err := json.Unmarshal(e.Data, &m); err != nil {
		s.t.Fatal(err)
	}
	return string(m.BodyB), e.LastEventID
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forge-Event", "ping")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %s %s", url, resp.Status, b)
	}
	return resp.Header.Get("X-Event-Id")
}

func TestRoutes(t *testing.T) {
	p, ts := newTestServer(t, Options{MaxBodyBytes: 10})
	ch := p.NewChannelName(false)
	tokCh := p.NewChannelName(true)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		method, path, body, accept string
		status                     int
		contains                   string
	}{
		{"GET", "/", "", "", 200, "new channel"},
		{"GET", "/new", "", "", 307, ""},
		{"HEAD", "/new", "", "", 307, ""},
		{"GET", "/new?token=1", "", "", 201, "read token: "},
		{"POST", "/new", "{}", "", 405, ""},
		{"GET", "/" + ch, "", "text/html", 200, "forgehooks relay --source"},
		{"GET", "/" + tokCh, "", "text/html", 200, "?token=TOKEN"},
		{"GET", "/a.b", "", "", 404, "not a channel"},
		{"GET", "/a/b", "", "", 404, "not a channel"},
		{"GET", "/my-channel", "", "", 404, "channel URLs come from /new"},
		{"POST", "/my-channel", "{}", "", 404, "channel URLs come from /new"},
		{"GET", "/" + ch[:12] + strings.Repeat("A", 12), "", "text/event-stream", 404, "unknown channel"}, // a forged tag
		{"PUT", "/" + ch, "{}", "", 405, ""},
		{"POST", "/" + ch, `{"a":1}`, "", 200, "ok"},
		{"POST", "/" + ch, `{"a":"too long"}`, "", 413, "limit"},
		{"GET", "/" + tokCh, "", "text/event-stream", 401, "needs its read token"},
		{"GET", "/" + tokCh + "?token=" + p.ReadToken(ch), "", "text/event-stream", 401, "needs its read token"}, // another channel's
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.URL+tt.path, strings.NewReader(tt.body))
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.contains) {
				t.Errorf("%s %s = %d %q; want %d containing %q", tt.method, tt.path, resp.StatusCode, b, tt.status, tt.contains)
			}
			if tt.status == 307 || tt.status == 201 {
				loc := resp.Header.Get("Location")
				name := strings.TrimPrefix(loc, ts.URL+"/")
				issued, withToken := issuedName(p.key, name)
				if !validChannel(name) || len(name) != 24 || !issued || withToken != (tt.status == 201) {
					t.Errorf("Location %q is not %s/<24-character channel> of the right kind", loc, ts.URL)
				}
				if tok := resp.Header.Get(HeaderReadToken); tt.status == 201 && (tok != p.ReadToken(name) || !strings.Contains(string(b), tok)) {
					t.Errorf("read token %q, body %q", tok, b)
				}
			}
		})
	}
}

// TestReadToken: a channel made with a token answers a subscription with the
// token only, in the query or as a bearer token; posting needs none.
func TestReadToken(t *testing.T) {
	p, ts := newTestServer(t, Options{})
	name := p.NewChannelName(true)
	url := ts.URL + "/" + name
	tok := p.ReadToken(name)
	s := subscribe(t, url+"?token="+tok, "")
	s.ready()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+tok)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with Authorization: Bearer: %s", resp.Status)
	}
	post(t, url, `{"n":1}`)
	if body, _ := s.message(); body != `{"n":1}` {
		t.Errorf("got %q", body)
	}
}

func TestDeliveryReachesEverySubscriber(t *testing.T) {
	_, ts := newTestServer(t, Options{AllowNamedChannels: true})
	url := ts.URL + "/chan1"
	a, b := subscribe(t, url, ""), subscribe(t, url, "")
	a.ready()
	b.ready()
	other := subscribe(t, ts.URL+"/chan2", "")
	other.ready()
	id := post(t, url, `{"n":1}`)
	for _, s := range []*stream{a, b} {
		if body, got := s.message(); body != `{"n":1}` || got != id {
			t.Errorf("got %q id %q, want the delivery with id %q", body, got, id)
		}
	}
	// chan2 got nothing: its next event is the one posted to it.
	post(t, ts.URL+"/chan2", `{"n":2}`)
	if body, _ := other.message(); body != `{"n":2}` {
		t.Errorf("chan2 got %q", body)
	}
}

// TestReconnectReplay: a client that goes away and comes back with
// Last-Event-ID gets what was posted meanwhile, once and in order; a new client
// does not.
func TestReconnectReplay(t *testing.T) {
	_, ts := newTestServer(t, Options{AllowNamedChannels: true})
	url := ts.URL + "/c"
	s := subscribe(t, url, "")
	s.ready()
	post(t, url, "1")
	_, last := s.message()
	s.close()

	post(t, url, "2")
	post(t, url, "3")

	back := subscribe(t, url, last)
	if n := back.ready(); n != 2 {
		t.Errorf("ready announces %d to replay, want 2", n)
	}
	for _, want := range []string{"2", "3"} {
		if body, _ := back.message(); body != want {
			t.Errorf("replayed %q, want %q", body, want)
		}
	}
	fresh := subscribe(t, url, "")
	if n := fresh.ready(); n != 0 {
		t.Errorf("a new client is offered %d to replay, want 0", n)
	}
	post(t, url, "4")
	for _, s := range []*stream{back, fresh} {
		if body, _ := s.message(); body != "4" {
			t.Errorf("live delivery: got %q, want 4", body)
		}
	}
}

// TestReadyIDCoversAnEmptyGap: a client that disconnects before any delivery
// comes back with the id that ready gave it, and still gets what was posted in
// between.
func TestReadyIDCoversAnEmptyGap(t *testing.T) {
	_, ts := newTestServer(t, Options{AllowNamedChannels: true})
	url := ts.URL + "/c"
	post(t, url, "before") // keeps the channel, and a head, while no one listens
	s := subscribe(t, url, "")
	s.ready()
	id := s.rd.LastEventID()
	if id == "" {
		t.Fatal("ready carried no id")
	}
	s.close()
	post(t, url, "during")
	back := subscribe(t, url, id)
	back.ready()
	if body, _ := back.message(); body != "during" {
		t.Errorf("got %q, want the delivery posted during the gap", body)
	}
}

func TestReplayBufferBounds(t *testing.T) {
	_, ts := newTestServer(t, Options{AllowNamedChannels: true, ReplayEvents: 2})
	url := ts.URL + "/c"
	s := subscribe(t, url, "")
	s.ready()
	id := s.rd.LastEventID()
	s.close()
	for i := 1; i <= 5; i++ {
		post(t, url, fmt.Sprint(i))
	}
	back := subscribe(t, url, id)
	back.ready()
	for _, want := range []string{"4", "5"} {
		if body, _ := back.message(); body != want {
			t.Errorf("got %q, want %q (the two the buffer keeps)", body, want)
		}
	}
}

// TestUnissuedLastEventIDReplaysNothing: only an id this proxy gave out for
// the channel, in its current epoch, is resumed from; a made-up one, one of
// another channel or with a forged tag, gets the live deliveries only.
func TestUnissuedLastEventIDReplaysNothing(t *testing.T) {
	p, ts := newTestServer(t, Options{AllowNamedChannels: true})
	url := ts.URL + "/c"
	first := post(t, url, "1")
	post(t, url, "2")
	epoch := strings.Split(first, "-")[0]
	other := post(t, ts.URL+"/other", "x")
	madeUp := []string{
		"OLDEPOCH-7", "garbage", "-1", epoch + "-0", epoch + "-1",
		epoch + "-0-AAAAAAAAAAAAA", strings.Replace(first, "-1-", "-0-", 1),
		other, // issued, but for another channel
		eventID(p.key, "c", "OLDEPOCH", 0),
		eventID(newKey(), "c", epoch, 0), // another proxy's key
	}
	for _, id := range madeUp {
		s := subscribe(t, url, id)
		if n := s.ready(); n != 0 {
			t.Errorf("Last-Event-ID %q: %d to replay, want 0", id, n)
		}
		s.close()
	}
	// The control: an issued id replays what follows it.
	s := subscribe(t, url, first)
	if n := s.ready(); n != 1 {
		t.Errorf("issued id: %d to replay, want 1", n)
	}
	if body, _ := s.message(); body != "2" {
		t.Errorf("issued id: replayed %q, want 2", body)
	}
}

// TestSlowSubscriberDoesNotBlock: a subscriber that never reads its stream does
// not hold up deliveries to the others nor the POSTs. If it did, this test would
// block until its deadline and fail.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	_, ts := newTestServer(t, Options{AllowNamedChannels: true})
	url := ts.URL + "/c"
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /c HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n") // and never read
	fast := subscribe(t, url, "")
	fast.ready()
	big := `{"pad":"` + strings.Repeat("x", 1<<20) + `"}` // enough to fill the socket buffers
	for i := 0; i < 16; i++ {
		post(t, url, big)
		// "body" holds the delivery verbatim; checking it is cheaper than
		// decoding bodyB's megabyte of base64.
		if e := fast.next(); e.Type != "message" || !bytes.Contains(e.Data, []byte(`"body":`+big+`,`)) {
			t.Fatalf("delivery %d did not arrive whole", i)
		}
	}
}

func TestRestartWithoutJournal(t *testing.T) {
	// A client holding an id from the first process comes back to a second
	// one: the id is not one the second issued, so nothing is replayed. The
	// first one's /new channels are unknown to the second.
	p1, ts1 := newTestServer(t, Options{AllowNamedChannels: true})
	issued := p1.NewChannelName(false)
	s := subscribe(t, ts1.URL+"/c", "")
	s.ready()
	post(t, ts1.URL+"/c", "old")
	_, id := s.message()
	s.close()

	_, ts2 := newTestServer(t, Options{AllowNamedChannels: true})
	post(t, ts2.URL+"/c", "new1")
	back := subscribe(t, ts2.URL+"/c", id)
	if n := back.ready(); n != 0 {
		t.Errorf("%d to replay for an id of another process, want 0", n)
	}
	post(t, ts2.URL+"/c", "new2")
	if body, _ := back.message(); body != "new2" {
		t.Errorf("got %q, want the live new2", body)
	}

	_, ts3 := newTestServer(t, Options{})
	resp, err := http.Post(ts3.URL+"/"+issued, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("a channel of another proxy without journal: %s, want 404", resp.Status)
	}
}

func TestJournalSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	p1, err := New(Options{JournalDir: dir, ReplayEvents: 3, AllowNamedChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	ts1 := httptest.NewServer(p1)
	s := subscribe(t, ts1.URL+"/c", "")
	s.ready()
	post(t, ts1.URL+"/c", "seen")
	_, id := s.message()
	s.close()
	post(t, ts1.URL+"/c", "a")
	post(t, ts1.URL+"/c", "b")
	p1.Close()
	ts1.Close()

	_, ts2 := newTestServer(t, Options{JournalDir: dir, ReplayEvents: 3, AllowNamedChannels: true})
	post(t, ts2.URL+"/c", "c")
	back := subscribe(t, ts2.URL+"/c", id)
	if n := back.ready(); n != 3 {
		t.Errorf("ready announces %d, want 3", n)
	}
	var ids []string
	for _, want := range []string{"a", "b", "c"} {
		body, id := back.message()
		ids = append(ids, id)
		if body != want {
			t.Errorf("got %q, want %q", body, want)
		}
	}
	var seqs []string
	for _, id := range ids {
		seqs = append(seqs, strings.Split(id, "-")[1])
	}
	if diff := cmp.Diff([]string{"2", "3", "4"}, seqs); diff != "" {
		t.Errorf("ids do not go on from before the restart (-want +got):\n%s", diff)
	}
}

func TestJournalCompactsAndKeepsHead(t *testing.T) {
	dir := t.TempDir()
	p, err := New(Options{JournalDir: dir, ReplayEvents: 2, AllowNamedChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(p)
	for i := 0; i < 50; i++ {
		post(t, ts.URL+"/c", fmt.Sprint(i))
	}
	p.Close()
	ts.Close()
	raw, _ := os.ReadFile(filepath.Join(dir, "c.journal"))
	if n := bytes.Count(raw, []byte("\n")); n > 2*2+16+2 {
		t.Errorf("journal holds %d lines for a buffer of 2: not compacted", n)
	}
	p2, err := New(Options{JournalDir: dir, ReplayEvents: 2, AllowNamedChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	c := p2.chans["c"]
	if c == nil || c.head != 50 || len(c.entries) != 2 || string(c.entries[1].data) == "" {
		t.Fatalf("restored channel: %+v", c)
	}
}

func TestJournalErrors(t *testing.T) {
	msg := `{"x":1}`
	tests := []struct {
		name    string
		content string
		wantErr bool
		want    []string // entries' data after loading
	}{
		{"good", "forgehooks-proxy-journal 1 EPOCH 0\n1 1 " + msg + "\n2 1 " + msg + "\n", false, []string{msg, msg}},
		{"last record cut short", "forgehooks-proxy-journal 1 EPOCH 0\n1 1 " + msg + "\n2 1 {\"x", false, []string{msg}},
		{"not a journal", "hello\n", true, nil},
		{"seq goes back", "forgehooks-proxy-journal 1 EPOCH 0\n2 1 a\n1 1 b\n", true, nil},
		{"bad record", "forgehooks-proxy-journal 1 EPOCH 0\nx y z\n", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "ch.journal"), []byte(tt.content), 0o600)
			p, err := New(Options{JournalDir: dir, ReplayAge: 100 * 365 * 24 * time.Hour, AllowNamedChannels: true})
			if tt.wantErr {
				if !errors.Is(err, ErrJournal) {
					t.Fatalf("New = %v, want ErrJournal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var got []string
			for _, e := range p.chans["ch"].entries {
				got = append(got, string(e.data))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCloseEndsStreams(t *testing.T) {
	p, ts := newTestServer(t, Options{AllowNamedChannels: true})
	s := subscribe(t, ts.URL+"/c", "")
	s.ready()
	p.Close() // returns only once the stream handler ended
	if _, err := s.rd.Next(); err != io.EOF && err != io.ErrUnexpectedEOF {
		t.Errorf("stream after Close: %v, want its end", err)
	}
}

func ExampleServer() {
	p, _ := New(Options{})
	defer p.Close()
	ts := httptest.NewServer(p)
	defer ts.Close()

	// A channel URL comes from /new.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(ts.URL + "/new")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	channel := resp.Header.Get("Location")

	req, _ := http.NewRequest("GET", channel, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	events := sse.NewReader(resp.Body, sse.Options{})
	ready, _ := events.Next()
	fmt.Println(ready.Type)

	if resp, err := http.Post(channel, "application/json", strings.NewReader(`{"zen":"Keep it logically awesome."}`)); err == nil {
		fmt.Println("subscribers:", resp.Header.Get(HeaderSubscribers))
		resp.Body.Close()
	}
	msg, _ := events.Next()
	var m map[string]json.RawMessage
	json.Unmarshal(msg.Data, &m)
	fmt.Println(msg.Type, string(m["body"]), string(m["content-type"]))
	// Output:
	// ready
	// subscribers: 1
	// message {"zen":"Keep it logically awesome."} "application/json"
}

// TestMessageCapacity: a message's capacity is its length, since the replay
// buffer's bounds count lengths.
func TestMessageCapacity(t *testing.T) {
	for _, body := range []string{`{"a":1}`, "{\n \"a\": 1\n}", "text \"quoted\"", "\x00bin", "", strings.Repeat(`{"k":"v"}`, 1)} {
		r := httptest.NewRequest("POST", "http://p.test/c?q=1", strings.NewReader(body))
		r.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("ab", 32))
		r.Header.Set("User-Agent", strings.Repeat("u", 300))
		data := encodeMessage(r, []byte(body), time.UnixMilli(1700000000000))
		if cap(data) > len(data)+32 {
			t.Errorf("body %q: message of %d bytes has capacity %d", body, len(data), cap(data))
		}
	}
}

// A channel made with /new?token=1 takes deliveries from anyone who has its
// URL, and subscriptions only with its read token.
func ExampleServer_ReadToken() {
	p, _ := New(Options{})
	defer p.Close()
	ts := httptest.NewServer(p)
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/new?token=1")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	channel, token := resp.Header.Get("Location"), resp.Header.Get(HeaderReadToken)
	fmt.Println(resp.Status)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, url := range []string{channel, channel + "?token=" + token} {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("subscribe:", resp.Status)
		resp.Body.Close()
	}
	// Output:
	// 201 Created
	// subscribe: 401 Unauthorized
	// subscribe: 200 OK
}

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

// testTimeout bounds every network wait of a test, so that a broken proxy fails
// the test instead of hanging it.
const testTimeout = 20 * time.Second

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
	_, ts := newTestServer(t, Options{MaxBodyBytes: 10})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		method, path, body, accept string
		status                     int
		contains                   string
	}{
		{"GET", "/", "", "", 200, "new channel"},
		{"GET", "/new", "", "", 307, ""},
		{"HEAD", "/new", "", "", 307, ""},
		{"POST", "/new", "{}", "", 405, ""},
		{"GET", "/abcDEF_12-3", "", "text/html", 200, "forgehooks relay --source"},
		{"GET", "/a.b", "", "", 404, "not a channel"},
		{"GET", "/a/b", "", "", 404, "not a channel"},
		{"PUT", "/abc", "{}", "", 405, ""},
		{"POST", "/abc", `{"a":1}`, "", 200, "ok"},
		{"POST", "/abc", `{"a":"too long"}`, "", 413, "limit"},
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
			if tt.status == 307 {
				loc := resp.Header.Get("Location")
				name := strings.TrimPrefix(loc, ts.URL+"/")
				if !validChannel(name) || len(name) != 16 {
					t.Errorf("Location %q is not %s/<16-character channel>", loc, ts.URL)
				}
			}
		})
	}
}

func TestDeliveryReachesEverySubscriber(t *testing.T) {
	_, ts := newTestServer(t, Options{})
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
	_, ts := newTestServer(t, Options{})
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
	_, ts := newTestServer(t, Options{})
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
	_, ts := newTestServer(t, Options{ReplayEvents: 2})
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

func TestUnknownLastEventIDReplaysAll(t *testing.T) {
	_, ts := newTestServer(t, Options{})
	url := ts.URL + "/c"
	post(t, url, "1")
	post(t, url, "2")
	for _, id := range []string{"OLDEPOCH-7", "garbage", "-1"} {
		s := subscribe(t, url, id)
		s.ready()
		for _, want := range []string{"1", "2"} {
			if body, _ := s.message(); body != want {
				t.Errorf("Last-Event-ID %q: got %q, want %q", id, body, want)
			}
		}
		s.close()
	}
}

// TestSlowSubscriberDoesNotBlock: a subscriber that never reads its stream does
// not hold up deliveries to the others nor the POSTs. If it did, this test would
// block until its deadline and fail.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	_, ts := newTestServer(t, Options{})
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
	// A client holding an id from the first process comes back to a second one:
	// it gets everything the second one received.
	_, ts1 := newTestServer(t, Options{})
	s := subscribe(t, ts1.URL+"/c", "")
	s.ready()
	post(t, ts1.URL+"/c", "old")
	_, id := s.message()
	s.close()

	_, ts2 := newTestServer(t, Options{})
	post(t, ts2.URL+"/c", "new1")
	post(t, ts2.URL+"/c", "new2")
	back := subscribe(t, ts2.URL+"/c", id)
	back.ready()
	for _, want := range []string{"new1", "new2"} {
		if body, _ := back.message(); body != want {
			t.Errorf("got %q, want %q", body, want)
		}
	}
}

func TestJournalSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	p1, err := New(Options{JournalDir: dir, ReplayEvents: 3})
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

	_, ts2 := newTestServer(t, Options{JournalDir: dir, ReplayEvents: 3})
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
	epoch := strings.Split(id, "-")[0]
	if diff := cmp.Diff([]string{epoch + "-2", epoch + "-3", epoch + "-4"}, ids); diff != "" {
		t.Errorf("ids do not go on from before the restart (-want +got):\n%s", diff)
	}
}

func TestJournalCompactsAndKeepsHead(t *testing.T) {
	dir := t.TempDir()
	p, err := New(Options{JournalDir: dir, ReplayEvents: 2})
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
	p2, err := New(Options{JournalDir: dir, ReplayEvents: 2})
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
			p, err := New(Options{JournalDir: dir, ReplayAge: 100 * 365 * 24 * time.Hour})
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
	p, ts := newTestServer(t, Options{})
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

	req, _ := http.NewRequest("GET", ts.URL+"/my-channel", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	events := sse.NewReader(resp.Body, sse.Options{})
	ready, _ := events.Next()
	fmt.Println(ready.Type, string(ready.Data))

	if resp, err := http.Post(ts.URL+"/my-channel", "application/json", strings.NewReader(`{"zen":"Keep it logically awesome."}`)); err == nil {
		resp.Body.Close()
	}
	msg, _ := events.Next()
	var m map[string]json.RawMessage
	json.Unmarshal(msg.Data, &m)
	fmt.Println(msg.Type, string(m["body"]), string(m["content-type"]))
	// Output:
	// ready {"channel":"my-channel","replay":0}
	// message {"zen":"Keep it logically awesome."} "application/json"
}

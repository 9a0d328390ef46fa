package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// journalsOnDisk returns the bytes of the journal files in dir.
func journalsOnDisk(t *testing.T, dir string) int64 {
	t.Helper()
	n, _ := dirBytes(t, dir)
	return n
}

// TestBuffersAndJournalsBoundedAcrossChannels: with many channels posted to,
// the replay buffers together stay under MaxBufferedBytes, the oldest going
// first whatever their channel, and the journals under MaxJournalBytes; the
// counts match what the files hold.
func TestBuffersAndJournalsBoundedAcrossChannels(t *testing.T) {
	dir := t.TempDir()
	const maxBuf, maxJournal = 1 << 20, 2 << 20
	p, ts := newTestServer(t, Options{JournalDir: dir, MaxBufferedBytes: maxBuf, MaxJournalBytes: maxJournal, AllowNamedChannels: true})
	body := `{"pad":"` + strings.Repeat("y", 64<<10) + `"}`
	chans := []string{"a", "b", "c"}
	for i := range 30 {
		for _, ch := range chans {
			post(t, ts.URL+"/"+ch, body)
			st := p.Stats()
			if st.BufferedBytes > maxBuf {
				t.Fatalf("after %d deliveries: %d bytes buffered, over %d", 3*i+1, st.BufferedBytes, maxBuf)
			}
			if st.JournalBytes > maxJournal {
				t.Fatalf("after %d deliveries: journals of %d bytes, over %d", 3*i+1, st.JournalBytes, maxJournal)
			}
			if disk := journalsOnDisk(t, dir); disk != st.JournalBytes {
				t.Fatalf("journal bytes counted %d, on disk %d", st.JournalBytes, disk)
			}
		}
	}
	// The newest deliveries are the ones kept: every channel's last is there.
	p.mu.Lock()
	defer p.mu.Unlock()
	var kept int
	for _, name := range chans {
		c := p.chans[name]
		if len(c.entries) == 0 || c.entries[len(c.entries)-1].seq != 30 {
			t.Errorf("channel %s lost its newest delivery: %d kept", name, len(c.entries))
		}
		kept += len(c.entries)
	}
	if kept < 3 {
		t.Errorf("%d deliveries kept in all", kept)
	}
}

// TestPendingBytesBound: a delivery is charged for what it holds, not for
// what it announces; while one holds the budget, another that would go past
// it waits for room and gets 503 with Retry-After; once the first is done,
// it goes through; a channel holds at most half the budget, so that other
// channels find room.
func TestPendingBytesBound(t *testing.T) {
	const size = 200 << 10
	p, ts := newTestServer(t, Options{AllowNamedChannels: true, MaxPendingBytes: pendingCost(size) + pendingCost(2)})
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"pad":"` + strings.Repeat("z", size-10) + `"}`
	fmt.Fprintf(conn, "POST /c HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:1])
	for deadline := time.Now().Add(testTimeout); p.Stats().PendingBytes == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow delivery did not take its place")
		}
	}
	if got := p.Stats().PendingBytes; got != firstBuffer {
		t.Errorf("one byte of a %d-byte body received: %d bytes reserved, want %d", size, got, firstBuffer)
	}
	// Half the body in: it holds its whole buffer.
	io.WriteString(conn, body[1:size/2])
	for deadline := time.Now().Add(testTimeout); p.Stats().PendingBytes < size; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery holds %d bytes with half its body in", p.Stats().PendingBytes)
		}
	}
	// Another on the same channel goes past the channel's half: it waits,
	// then 503 (or goes through if the first finished meanwhile: it cannot).
	resp, err := http.Post(ts.URL+"/c", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second delivery: %s, Retry-After %q, %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), b)
	}
	// A small one, on another channel, still fits.
	post(t, ts.URL+"/other", "{}")

	io.WriteString(conn, body[size/2:])
	line, _ := io.ReadAll(io.LimitReader(conn, 12))
	if string(line) != "HTTP/1.1 200" {
		t.Fatalf("slow delivery answered %q", line)
	}
	post(t, ts.URL+"/c", body)
	if st := p.Stats(); st.PendingBytes != 0 {
		t.Errorf("%d bytes still reserved with nothing being received", st.PendingBytes)
	}
}

// TestTooLargeBeforeBudgetWait: while a slow delivery holds a channel's
// half of the pending budget, a body past MaxBodyBytes on that channel is
// answered 413 at once, by its Content-Length or, sent chunked, as it
// crosses the limit, instead of waiting 5 s for room (503); a chunked body
// within the limit then gets 503 at its end.
func TestTooLargeBeforeBudgetWait(t *testing.T) {
	const size = 200 << 10
	p, ts := newTestServer(t, Options{AllowNamedChannels: true, MaxBodyBytes: 1 << 20, MaxPendingBytes: pendingCost(size) + pendingCost(2)})
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /c HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", size, strings.Repeat(" ", size/2))
	for deadline := time.Now().Add(testTimeout); p.Stats().PendingBytes < size; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the slow delivery holds %d bytes with half its body in", p.Stats().PendingBytes)
		}
	}
	for _, tt := range []struct {
		name    string
		length  int64 // -1: chunked
		size    int
		want    int
		waitMin time.Duration
	}{
		{"chunked, over the limit", -1, 2 << 20, 413, 0},
		{"declared, over the limit", 2 << 20, 2 << 20, 413, 0},
		{"chunked, within the limit", -1, 300 << 10, 503, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A reader that is neither bytes.Reader nor strings.Reader: sent
			// chunked unless a length is set.
			req, err := http.NewRequest("POST", ts.URL+"/c", io.MultiReader(bytes.NewReader(bytes.Repeat([]byte(" "), tt.size))))
			if err != nil {
				t.Fatal(err)
			}
			if tt.length >= 0 {
				req.ContentLength = tt.length
			}
			req.Header.Set("Content-Type", "application/json")
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			took := time.Since(start)
			if resp.StatusCode != tt.want {
				t.Errorf("answered %d, want %d", resp.StatusCode, tt.want)
			}
			if took >= budgetWait/2 {
				t.Errorf("answered after %v: it waited for room (%v)", took, budgetWait)
			}
		})
	}
	io.WriteString(conn, strings.Repeat(" ", size-size/2))
	if line, _ := io.ReadAll(io.LimitReader(conn, 12)); string(line) != "HTTP/1.1 200" {
		t.Fatalf("slow delivery answered %q", line)
	}
}

// TestChannelCapEvictsIdlest: with MaxChannels held, a new channel takes the
// place of the channel without subscribers idle longest; only when all have
// subscribers is it refused, with 503 and Retry-After.
func TestChannelCapEvictsIdlest(t *testing.T) {
	p, ts := newTestServer(t, Options{MaxChannels: 2})
	a, b, c := p.NewChannelName(false), p.NewChannelName(false), p.NewChannelName(false)
	sa := subscribe(t, ts.URL+"/"+a, "")
	sa.ready()
	post(t, ts.URL+"/"+b, "old")
	post(t, ts.URL+"/"+c, "new") // b, idle and unsubscribed, makes room
	p.mu.Lock()
	_, hasA := p.chans[a]
	_, hasB := p.chans[b]
	_, hasC := p.chans[c]
	p.mu.Unlock()
	if !hasA || hasB || !hasC {
		t.Errorf("channels held: a %v, b %v, c %v; want a and c", hasA, hasB, hasC)
	}

	sc := subscribe(t, ts.URL+"/"+c, "")
	sc.ready()
	resp, err := http.Post(ts.URL+"/"+p.NewChannelName(false), "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("all channels subscribed: %s, Retry-After %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	sc.close()
	// Once c's subscriber left, c can make room.
	deadline := time.Now().Add(testTimeout)
	for {
		resp, err := http.Post(ts.URL+"/"+p.NewChannelName(false), "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after the subscriber left: %s", resp.Status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestJournalLoadHoldsBounds: journals holding far more than the bounds load
// into buffers within them, newest first kept, and a record longer than any
// message could be is skipped without being held.
func TestJournalLoadHoldsBounds(t *testing.T) {
	dir := t.TempDir()
	data := `{"pad":"` + strings.Repeat("w", 100<<10) + `"}`
	for _, ch := range []string{"one", "two"} {
		var b bytes.Buffer
		b.WriteString("forgehooks-proxy-journal 1 EPOCH" + ch + " 0\n")
		now := time.Now().UnixMilli()
		for i := 1; i <= 50; i++ {
			fmt.Fprintf(&b, "%d %d %s\n", i, now, data)
		}
		if ch == "two" {
			fmt.Fprintf(&b, "51 %d %s\n", now, strings.Repeat("h", 8<<20)) // longer than any message of a 1 KiB body
		}
		os.WriteFile(filepath.Join(dir, ch+".journal"), b.Bytes(), 0o600)
	}
	const maxBuf = 1 << 20
	p, err := New(Options{JournalDir: dir, MaxBufferedBytes: maxBuf, MaxBodyBytes: 1 << 10, AllowNamedChannels: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st := p.Stats()
	if st.BufferedBytes > maxBuf || st.BufferedBytes == 0 {
		t.Errorf("loaded %d bytes, want some and at most %d", st.BufferedBytes, maxBuf)
	}
	if disk := journalsOnDisk(t, dir); disk != st.JournalBytes || disk > 2*maxBuf {
		t.Errorf("journals after loading: %d bytes on disk, %d counted", disk, st.JournalBytes)
	}
	for _, name := range []string{"one", "two"} {
		c := p.chans[name]
		if c == nil {
			t.Fatalf("channel %s not restored", name)
		}
		for _, e := range c.entries {
			if len(e.data) != len(data) {
				t.Errorf("channel %s: a record of %d bytes was loaded", name, len(e.data))
			}
		}
		if n := len(c.entries); n > 0 && c.entries[n-1].seq != 50 {
			t.Errorf("channel %s: newest kept is %d, want 50", name, c.entries[n-1].seq)
		}
	}
}

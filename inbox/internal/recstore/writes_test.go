package recstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestParseAck: the store's answers to a record write, in the form it
// writes them and in the others the full decode reads.
func TestParseAck(t *testing.T) {
	w := &writes{ack: []byte(`{"stream":"T_SEEN","seq":`)}
	status := func(code, desc string) nats.Header {
		return nats.Header{"Status": {code}, "Description": {desc}}
	}
	for _, c := range []struct {
		name    string
		data    string
		header  nats.Header
		seq     uint64
		wantErr error // nil: any error when fails
		fails   bool
	}{
		{name: "the store's form", data: `{"stream":"T_SEEN","seq":42}`, seq: 42},
		{name: "a duplicate", data: `{"stream":"T_SEEN","seq":7,"duplicate":true}`, seq: 7},
		{name: "the largest sequence", data: `{"stream":"T_SEEN","seq":18446744073709551615}`, seq: 18446744073709551615},
		{name: "a domain first", data: `{"stream":"T_SEEN","domain":"hub","seq":9}`, seq: 9},
		{name: "spaces", data: `{ "stream": "T_SEEN", "seq": 11 }`, seq: 11},
		{name: "an error", data: `{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}`, fails: true},
		{name: "no stream", data: `{"seq":3}`, wantErr: jetstream.ErrInvalidJSAck, fails: true},
		{name: "not JSON", data: `{"stream":"T_SEEN","seq":4`, wantErr: jetstream.ErrInvalidJSAck, fails: true},
		{name: "a sequence past 64 bits", data: `{"stream":"T_SEEN","seq":118446744073709551615}`, wantErr: jetstream.ErrInvalidJSAck, fails: true},
		{name: "no responders", header: status("503", ""), wantErr: jetstream.ErrNoStreamResponse, fails: true},
		{name: "another status", header: status("408", "Request Timeout"), fails: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			seq, err := w.parseAck(&nats.Msg{Data: []byte(c.data), Header: c.header})
			switch {
			case c.fails && err == nil:
				t.Fatalf("seq %d, no error", seq)
			case c.fails && c.wantErr != nil && !errors.Is(err, c.wantErr):
				t.Fatalf("error %v, want %v", err, c.wantErr)
			case !c.fails && err != nil:
				t.Fatal(err)
			case !c.fails && seq != c.seq:
				t.Fatalf("seq %d, want %d", seq, c.seq)
			}
		})
	}
	var apiErr *jetstream.APIError
	if _, err := w.parseAck(&nats.Msg{Data: []byte(`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}`)}); !errors.As(err, &apiErr) || apiErr.ErrorCode != 10077 {
		t.Errorf("the store's error: %v, want its API error", err)
	}
}

// FuzzParseAck: whatever the answer, a sequence read in place is the one
// encoding/json reads, and an answer encoding/json reads as a PubAck
// without an error is taken.
func FuzzParseAck(f *testing.F) {
	for _, s := range []string{`{"stream":"T_SEEN","seq":42}`, `{"stream":"T_SEEN","seq":7,"duplicate":true}`,
		`{"error":{"code":503,"description":"x"}}`, `{"stream":"T_SEEN","seq":0}`, `{"stream":"T_SEEN","seq":1}}`} {
		f.Add([]byte(s))
	}
	w := &writes{ack: []byte(`{"stream":"T_SEEN","seq":`)}
	f.Fuzz(func(t *testing.T, data []byte) {
		seq, err := w.parseAck(&nats.Msg{Data: data})
		var pa struct {
			Error  *jetstream.APIError `json:"error"`
			Stream string              `json:"stream"`
			Seq    uint64              `json:"seq"`
		}
		jerr := json.Unmarshal(data, &pa)
		if jerr == nil && pa.Error == nil && pa.Stream != "" {
			if err != nil {
				t.Fatalf("%q: %v; encoding/json reads seq %d", data, err, pa.Seq)
			}
			if seq != pa.Seq {
				t.Fatalf("%q: seq %d; encoding/json reads %d", data, seq, pa.Seq)
			}
		}
	})
}

// TestWriteNotStored: a record whose write the store does not take (here,
// no stream on its subject) fails its waiters, and a later read finds
// nothing under its key; writes after it are stored.
func TestWriteNotStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startStore(t, t.TempDir())
	subject := s.r.subject
	s.r.subject = "t.rec.nowhere"
	ctx1, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := s.r.PutWait(ctx1, []byte("lost"), "k_lost"); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("PutWait on a subject no stream takes: %v, want ErrNoStreamResponse", err)
	}
	s.r.subject = subject
	wantNone(t, s.r, "k_lost")
	if err := s.r.PutWaitEach(ctx, Entry{Key: "k_a", Value: []byte("a")}, Entry{Key: "k_b", Value: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	s.r.PutAsync([]byte("c"), "k_c")
	if err := s.r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wantValue(t, s.r, "k_a", "a")
	wantValue(t, s.r, "k_b", "b")
	wantValue(t, s.r, "k_c", "c")
	s.r.w.mu.Lock()
	left := len(s.r.w.inflight)
	s.r.w.mu.Unlock()
	if left != 0 {
		t.Errorf("%d writes still under way after Flush", left)
	}
}

// TestWritesGivenUpOnDisconnect: the writes under way when the connection
// drops are failed at once (nobody answers them), and the index reads the
// stream again for them.
func TestWritesGivenUpOnDisconnect(t *testing.T) {
	t.Parallel()
	s := startStore(t, t.TempDir())
	// A write whose answer cannot come: registered, never sent.
	done := make(chan error, 1)
	s.r.w.mu.Lock()
	s.r.w.next++
	s.r.w.inflight[s.r.w.next] = &write{entries: []*recordEntry{{keys: []string{"k"}, done: done}}, sent: time.Now(), handled: make(chan struct{})}
	s.r.w.mu.Unlock()
	if err := s.nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, nats.ErrDisconnected) {
			t.Errorf("the write's outcome: %v, want ErrDisconnected", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the write under way was not given up when the connection dropped")
	}
	s.r.mu.Lock()
	rescan := s.r.rescan
	s.r.mu.Unlock()
	if !rescan {
		t.Error("no rescan after a write given up")
	}
}

// BenchmarkPutWaitEach: a worker's shared status record (two entries,
// waited for), 8 writers at once; allocations per call with -benchmem.
func BenchmarkPutWaitEach(b *testing.B) {
	s := startStore(b, b.TempDir())
	value := []byte(`{"status":"handled","attempt":1,"seq":12345,"at":"2026-12-08T00:00:00Z"}`)
	var n atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			a, c := "s_"+strconv.FormatInt(i, 10), "s_"+strconv.FormatInt(i, 10)+"_next"
			if err := s.r.PutWaitEach(context.Background(), Entry{Key: a, Value: value}, Entry{Key: c, Value: value}); err != nil {
				b.Error(err)
			}
		}
	})
}

// TestWriteSentAgainAfterNoResponders: a write answered "no responders"
// (no stream on its subject yet, as while a server starts again) is sent
// again a moment later, and stored once the stream is there.
func TestWriteSentAgainAfterNoResponders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startStore(t, t.TempDir())
	s.r.subject = "t.rec.late"
	// Long enough to make the stream between the first answer and the
	// write sent again, however loaded the machine.
	s.r.w.retryWait = 2 * time.Second
	done := make(chan error, 1)
	go func() { done <- s.r.PutWait(ctx, []byte("v"), "k_late") }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.r.w.mu.Lock()
		retried := false
		for _, wr := range s.r.w.inflight {
			retried = retried || wr.retries > 0
		}
		s.r.w.mu.Unlock()
		if retried {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write was not answered no responders")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: "LATE", Subjects: []string{"t.rec.late"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("PutWait while the stream was being made: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("PutWait did not return")
	}
	info, err := s.js.Stream(ctx, "LATE")
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("the late stream holds %d records, want 1", n)
	}
}

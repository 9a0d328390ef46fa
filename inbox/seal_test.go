package inbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/inbox/internal/stored"
	"forgehooks.dev/forgehooks/webhooks"
)

// forgedMessages are messages published straight to the inbox's subject
// with every header the inbox writes forged, as someone allowed to publish
// there (but without the key) would: without a seal, with a made-up seal,
// and with a body that is not JSON (its size header matching).
func forgedMessages(in *Inbox) map[string]*nats.Msg {
	forge := func(id string, body []byte) *nats.Msg {
		m := &nats.Msg{Subject: in.inSubj + stored.StoreToken, Data: body, Header: nats.Header{}}
		for k, v := range map[string]string{
			stored.HeaderVersion: stored.Version, stored.HeaderEvent: "push", stored.HeaderDelivery: id,
			stored.HeaderTenant: "acme", stored.HeaderSignature: "sha256=" + strings.Repeat("0", 64),
			stored.HeaderReceivedAt: time.Now().UTC().Format(time.RFC3339Nano), stored.HeaderAction: "opened",
			stored.HeaderRepository: "o/r", stored.HeaderSender: "s", stored.HeaderSize: strconv.Itoa(len(body)),
			"X-Forge-Event": "push", "X-Forge-Delivery": id,
		} {
			m.Header.Set(k, v)
		}
		return m
	}
	badSeal := forge("forged-sealed", []byte(`{"zen":"x"}`))
	badSeal.Header.Set(stored.HeaderSeal, "v1="+strings.Repeat("A", 43))
	return map[string]*nats.Msg{
		"forged-unsealed": forge("forged-unsealed", []byte(`{"zen":"x"}`)),
		"forged-sealed":   badSeal,
		"forged-notjson":  forge("forged-notjson", []byte(`not json at all`)),
	}
}

// TestSealForgedNotRun: messages published straight to the inbox's
// subject, every inbox header forged, run no handler in an embedded or a
// clustered inbox: each is a dead letter at once (one attempt, no retry
// schedule) whose reason says unsealed or bad seal, and is counted; a
// delivery the inbox stored runs.
func TestSealForgedNotRun(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"embedded", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			wh := newWebhooks(t)
			var ran, ranForged atomic.Int32
			wh.OnAny(func(ctx context.Context, e emitter.Event) error {
				ran.Add(1)
				if info, _ := webhooks.DeliveryFrom(ctx); strings.HasPrefix(info.ID, "forged") {
					ranForged.Add(1)
				}
				return nil
			})
			o := Options{Receiver: wh, RetryDelays: []time.Duration{time.Hour}}
			var in *Inbox
			if mode == "embedded" {
				in = openInbox(t, t.TempDir(), o)
			} else {
				in = openClusterInbox(t, singleNode(t), o)
			}
			ctx := context.Background()
			forged := forgedMessages(in)
			for _, m := range forged {
				if _, err := in.js.PublishMsg(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "good", Name: "push", Payload: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 20*time.Second, "three dead letters and the good delivery run", func() bool {
				d, _ := in.Dead(ctx)
				return len(d) == 3 && ran.Load() >= 1
			})
			if n := ranForged.Load(); n != 0 {
				t.Errorf("handlers ran %d forged messages", n)
			}
			dead, _ := in.Dead(ctx)
			for _, d := range dead {
				want := "unsealed"
				if d.ID == "forged-sealed" {
					want = "bad seal"
				}
				if len(d.Attempts) != 1 || !strings.Contains(d.Attempts[0].Err, want) {
					t.Errorf("dead letter %s: attempts %+v, want one, refused: %s", d.ID, d.Attempts, want)
				}
			}
			if c := in.Counters(); c.Unsealed != 2 || c.BadSeals != 1 {
				t.Errorf("counters %+v, want 2 unsealed and 1 bad seal", c)
			}
		})
	}
}

// singleNode starts a one-server NATS with JetStream on 127.0.0.1 for the
// test and returns its URL.
func singleNode(t *testing.T) []string {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: freePorts(t, 1)[0], JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	cl := &natsCluster{t: t, opts: []*server.Options{o}, nodes: []*server.Server{nil}}
	cl.start(0)
	t.Cleanup(func() { cl.stop(0) })
	return cl.urls()
}

// TestSealRetryReseals: a dead letter stored again (Retry) carries a seal
// that holds, and runs; in a cluster a refused (forged) message's dead
// letter is not stored again, which would seal what no receiver verified.
func TestSealRetryReseals(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"embedded", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			wh := newWebhooks(t)
			var fail atomic.Bool
			fail.Store(true)
			var ranForged atomic.Int32
			wh.OnAny(func(ctx context.Context, e emitter.Event) error {
				if info, _ := webhooks.DeliveryFrom(ctx); strings.HasPrefix(info.ID, "forged") {
					ranForged.Add(1)
				}
				if fail.Load() {
					return webhooks.Permanent(errors.New("not yet"))
				}
				return nil
			})
			o := Options{Receiver: wh}
			var in *Inbox
			if mode == "embedded" {
				in = openInbox(t, t.TempDir(), o)
			} else {
				in = openClusterInbox(t, singleNode(t), o)
			}
			ctx := context.Background()
			if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "r-1", Name: "push", Payload: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
			forged := forgedMessages(in)
			if mode == "cluster" {
				for _, id := range []string{"forged-unsealed", "forged-sealed"} {
					forged[id].Header.Del(stored.HeaderTenant)
					if _, err := in.js.PublishMsg(ctx, forged[id]); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := map[string]int{"embedded": 1, "cluster": 3}[mode]
			waitFor(t, 20*time.Second, "the dead letters", func() bool { d, _ := in.Dead(ctx); return len(d) == want })
			fail.Store(false)
			if err := in.Retry(ctx, "r-1"); err != nil {
				t.Fatal(err)
			}
			waitHandled(t, in, "r-1", 20*time.Second)
			if mode == "cluster" {
				for id, reason := range map[string]string{"forged-unsealed": "unsealed", "forged-sealed": "bad seal"} {
					if err := in.Retry(ctx, id); err == nil || !strings.Contains(err.Error(), reason) {
						t.Errorf("Retry of %s: %v, want a refusal: %s", id, err, reason)
					}
				}
			}
			if c := in.Counters(); c.Unsealed+c.BadSeals != uint64(want-1) || ranForged.Load() != 0 {
				t.Errorf("counters %+v, %d forged runs", c, ranForged.Load())
			}
		})
	}
}

// TestInsecureUnsealed: with URLs and no key, Open fails naming the
// options; with InsecureUnsealed, a forged message with a body that is not
// JSON is a dead letter at once, and a well-formed one runs: the risk the
// option's documentation states.
func TestInsecureUnsealed(t *testing.T) {
	t.Parallel()
	urls := singleNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Open(ctx, Options{URLs: urls, Logger: quiet(t)}); !errors.Is(err, ErrNoKey) ||
		!strings.Contains(err.Error(), "Options.Key") || !strings.Contains(err.Error(), "Options.InsecureUnsealed") {
		t.Errorf("Open with URLs and no key: %v, want ErrNoKey naming both options", err)
	}
	if _, err := Open(ctx, Options{URLs: urls, Key: []byte("short"), Logger: quiet(t)}); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("Open with a short key: %v", err)
	}
	wh := newWebhooks(t)
	var ran atomic.Int32
	wh.OnAny(func(context.Context, emitter.Event) error { ran.Add(1); return nil })
	in := openClusterInbox(t, urls, Options{Receiver: wh, InsecureUnsealed: true, Key: []byte{}, RetryDelays: []time.Duration{time.Hour}})
	forged := forgedMessages(in)
	for _, id := range []string{"forged-notjson", "forged-unsealed"} {
		if _, err := in.js.PublishMsg(ctx, forged[id]); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the non-JSON body dead and the other run", func() bool {
		d, _ := in.Dead(ctx)
		return len(d) == 1 && ran.Load() == 1
	})
	d, _ := in.Dead(ctx)
	if d[0].ID != "forged-notjson" || len(d[0].Attempts) != 1 || !strings.Contains(d[0].Attempts[0].Err, "not a JSON object") {
		t.Errorf("dead letter %+v: want forged-notjson, one attempt, not a JSON object", d[0])
	}
}

// TestSealKeyFile: the embedded mode makes its key at the first Open
// (0600, 32 bytes in hex) and reads it at the next, so that a delivery stored
// before a restart runs after it; a key file its group or others may read,
// a link or a FIFO is refused, at once.
func TestSealKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in, err := Open(ctx, Options{Dir: dir, Logger: quiet(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Enqueue(ctx, webhooks.Delivery{ID: "k-1", Name: "push", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	in.Close(ctx)
	path := filepath.Join(dir, KeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 2*MinKeyLen+1 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	wh := newWebhooks(t)
	var ran atomic.Int32
	wh.OnAny(func(context.Context, emitter.Event) error { ran.Add(1); return nil })
	in = openInbox(t, dir, Options{Receiver: wh})
	waitHandled(t, in, "k-1", 20*time.Second)
	if c := in.Counters(); c.Unsealed+c.BadSeals != 0 || ran.Load() != 1 {
		t.Fatalf("after a restart: %+v, %d runs", c, ran.Load())
	}
	in.Close(ctx)

	key, _ := os.ReadFile(path)
	for _, tc := range []struct {
		name  string
		plant func(string) error
		want  string
	}{
		{"readable by others", func(p string) error { return os.Chmod(p, 0o644) }, "chmod 600"},
		{"a link", func(p string) error {
			other := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(other, key, 0o600); err != nil {
				return err
			}
			return os.Symlink(other, p)
		}, "not a regular file"},
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			p := filepath.Join(d, KeyFile)
			if tc.name == "readable by others" {
				if err := os.WriteFile(p, key, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.plant(p); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			in, err := Open(ctx, Options{Dir: d, Logger: quiet(t)})
			if err == nil {
				in.Close(ctx)
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) || time.Since(start) > 5*time.Second {
				t.Errorf("Open: %v after %v, want %q at once", err, time.Since(start), tc.want)
			}
		})
	}
}

// TestParseKey: hex of at least 32 bytes; errors never quote the key.
func TestParseKey(t *testing.T) {
	t.Parallel()
	good := strings.Repeat("ab", MinKeyLen)
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{good, true},
		{" " + good + "\n", true},
		{good[:62], false},
		{"zz" + good[2:], false},
		{"", false},
	} {
		k, err := ParseKey(tc.in)
		if (err == nil) != tc.ok || tc.ok && len(k) != MinKeyLen {
			t.Errorf("ParseKey(%q): %d bytes, %v", tc.in, len(k), err)
		}
		if err != nil && len(tc.in) > 8 && strings.Contains(err.Error(), strings.TrimSpace(tc.in)[2:10]) {
			t.Errorf("ParseKey's error quotes the key: %v", err)
		}
	}
}

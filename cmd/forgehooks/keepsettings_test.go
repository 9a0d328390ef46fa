package main

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestInboxQueryKeepsSettings: 'forgehooks inbox ls --nats' with its flag
// defaults leaves the limits that the fleet's receiver set on its streams
// (a smaller store, a longer duplicate window) as they were.
func TestInboxQueryKeepsSettings(t *testing.T) {
	t.Parallel()
	url := plainNATS(t)
	sv := start(t, nil, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--nats", url, "--workers", "0",
		"--max-store-bytes", "64MiB", "--duplicate-window", "10d")
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	configs := func() map[string]jetstream.StreamConfig {
		t.Helper()
		out := map[string]jetstream.StreamConfig{}
		list := js.ListStreams(ctx)
		for info := range list.Info() {
			out[info.Config.Name] = info.Config
		}
		if err := list.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := configs()
	if cfg := before["FORGEHOOKS_INBOX"]; cfg.MaxBytes != 64<<20 {
		t.Fatalf("serve made the inbox stream with MaxBytes %d, want 64 MiB (streams: %v)", cfg.MaxBytes, len(before))
	}
	for _, args := range [][]string{{"inbox", "ls", "--nats", url}, {"inbox", "dead", "--nats", url}} {
		if code, _, errOut := runCmd(t, "", nil, args...); code != exitOK {
			t.Fatalf("%v: exit %d: %s\nserve's log:\n%s", args, code, errOut, sv.stderr)
		}
	}
	after := configs()
	for name, b := range before {
		a := after[name]
		if a.MaxBytes != b.MaxBytes || a.MaxAge != b.MaxAge || a.Duplicates != b.Duplicates || a.Replicas != b.Replicas {
			t.Errorf("%s changed by a query: MaxBytes %d→%d, MaxAge %v→%v, Duplicates %v→%v, Replicas %d→%d", name,
				b.MaxBytes, a.MaxBytes, time.Duration(b.MaxAge), time.Duration(a.MaxAge), b.Duplicates, a.Duplicates, b.Replicas, a.Replicas)
		}
	}
}

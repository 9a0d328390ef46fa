package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// TestOperatorUsage: the operator's mistakes exit 2 with a message that
// names the flag; a missing --inbox directory is never made.
func TestOperatorUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "does-not-exist")
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"ls, missing dir", []string{"inbox", "ls", "--inbox", missing}, "--inbox " + missing + ": no such directory"},
		{"show, missing dir", []string{"inbox", "show", "x", "--inbox", missing}, "no such directory"},
		{"retry, missing dir", []string{"inbox", "retry", "--dead", "--inbox", missing}, "no such directory"},
		{"dead, a file", []string{"inbox", "dead", "--inbox", file}, "not a directory"},
		{"catchup, missing dir", []string{"catchup", "--token-env", "T", "--repo", "o/r", "--hook-id", "1", "--inbox", missing}, "no such directory"},
		{"retry, nothing", []string{"inbox", "retry", "--inbox", dir}, "give delivery ids, or --dead"},
		{"retry, ids and --dead", []string{"inbox", "retry", "a", "--dead", "--inbox", dir}, "not both"},
		{"replay, nothing", []string{"inbox", "replay", "--inbox", dir}, "give delivery ids"},
		{"--dead elsewhere", []string{"inbox", "ls", "--dead", "--inbox", dir}, "--dead is for retry"},
		{"show, two ids", []string{"inbox", "show", "a", "b", "--inbox", dir}, "show takes 1 argument"},
		{"store bound too small", []string{"serve", "--secret", "s", "--addr", "127.0.0.1:0", "--inbox", dir, "--max-store-bytes", "10"}, "--max-store-bytes 10 is too small"},
		{"ui without token", []string{"serve", "--secret", "s", "--addr", "127.0.0.1:0", "--ui", "0.0.0.0:0"}, "--ui 0.0.0.0:0 is not a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, "", nil, tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr %q, want %q\nstdout: %s", code, exitUsage, errOut, tt.stderr, out)
			}
			if strings.Contains(errOut, "Options.") || strings.Contains(errOut, "Inspector.Token") {
				t.Errorf("the message names a Go field, not a flag: %s", errOut)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing --inbox directory was made: %v", err)
	}
	// A directory others may write to is refused by serve and the inbox
	// command alike, with the chmod that makes it private.
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	for _, args := range [][]string{
		{"serve", "--secret", "s", "--addr", "127.0.0.1:0", "--inbox", open},
		{"inbox", "ls", "--inbox", open},
	} {
		code, _, errOut := runCmd(t, "", nil, args...)
		if code != exitFailure || !strings.Contains(errOut, "writable by its group or others") || !strings.Contains(errOut, "chmod 700 "+open) {
			t.Errorf("%s --inbox on a world-writable directory: exit %d, %s", args[0], code, errOut)
		}
	}
	if ents, _ := os.ReadDir(open); len(ents) > 0 {
		t.Errorf("%s written in a refused directory", ents[0].Name())
	}
}

// TestSendTwice: two sends of a built-in sample are two deliveries (two
// 202s and two handler runs through an inbox with its replay guard), each
// with its own id; --delivery a then b are two deliveries too, and a again
// is a duplicate.
func TestSendTwice(t *testing.T) {
	t.Parallel()
	rec := newReceived()
	sv := start(t, &cli{setup: rec.setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", t.TempDir())
	url := "http://" + sv.addr + webhooks.DefaultPath
	for i := 0; i < 2; i++ {
		code, out, errOut := runCmd(t, "", nil, "send", "--secret", testSecret, "--url", url, "--event", "issues.opened")
		if code != exitOK || !strings.HasPrefix(out, "202 ") {
			t.Fatalf("send #%d: exit %d %q %s", i+1, code, out, errOut)
		}
	}
	deadline := time.Now().Add(testTimeout)
	for {
		rec.mu.Lock()
		n := len(rec.events)
		var ids []string
		for _, e := range rec.events {
			ids = append(ids, e.ID)
		}
		rec.mu.Unlock()
		if n >= 2 {
			if ids[0] == ids[1] {
				t.Errorf("both sends used delivery id %s", ids[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handlers ran %d times, want 2:\n%s", n, sv.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Each id given gets a body of its own too: b is a delivery of its own,
	// not a replay of a; a sent again is the same delivery.
	for i, tc := range []struct{ id, want string }{{"a", "202 "}, {"b", "202 "}, {"a", "200 "}} {
		code, out, errOut := runCmd(t, "", nil, "send", "--secret", testSecret, "--url", url, "--event", "issues.opened", "--delivery", tc.id)
		if code != exitOK || !strings.HasPrefix(out, tc.want) {
			t.Errorf("send --delivery %s (#%d): exit %d %q %s; want %s", tc.id, i+1, code, out, errOut, tc.want)
		}
	}
}

// TestDistinctBody: the whitespace after a sample spells its id, and the
// body stays the same JSON document.
func TestDistinctBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":1}`)
	a, b := distinctBody(body, "id-1"), distinctBody(body, "id-2")
	if string(a) == string(b) {
		t.Fatal("two ids, one body")
	}
	var va, vb map[string]int
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil || va["a"] != 1 || vb["a"] != 1 {
		t.Errorf("not the same document: %q %q", a, b)
	}
	if !strings.HasPrefix(string(a), string(body)) || strings.Trim(string(a[len(body):]), " \t\n") != "" {
		t.Errorf("distinctBody = %q: want the body and whitespace", a)
	}
}

// TestInboxRetryMany: retry takes several ids, and --dead (with --event)
// runs every dead letter again; a failing id fails the command and the
// others are still retried.
func TestInboxRetryMany(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var failing atomic.Bool
	failing.Store(true)
	rec := newReceived()
	setup := func(wh *webhooks.Webhooks) {
		rec.setup(wh)
		wh.OnAny(func(ctx context.Context, e emitter.Event) error {
			if failing.Load() {
				return errors.New("down")
			}
			return nil
		})
	}
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", dir, "--retry-delays", "none")
	url := "http://" + sv.addr + webhooks.DefaultPath
	ids := []string{"i1", "i2", "i3", "p1", "p2"}
	for _, id := range ids {
		event := "issues"
		if id[0] == 'p' {
			event = "push"
		}
		if code, ans := deliver(t, url, event, id, []byte(`{"n":"`+id+`"}`), nil); code != 202 {
			t.Fatalf("%s: %d %s", id, code, ans)
		}
	}
	waitDead := func(n int) {
		t.Helper()
		deadline := time.Now().Add(testTimeout)
		for {
			_, out, _ := runCmd(t, "", nil, "inbox", "dead", "--inbox", dir, "--json")
			var recs []struct{ ID string }
			json.Unmarshal([]byte(out), &recs)
			if len(recs) == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d dead letters, want %d: %s", len(recs), n, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitDead(5)
	failing.Store(false)
	// Two ids and one that is not a dead letter: exit 1, the two retried.
	code, out, errOut := runCmd(t, "", nil, "inbox", "retry", "i1", "i2", "nope", "--inbox", dir)
	if code != exitFailure || strings.Count(out, "stored again") != 2 || !strings.Contains(errOut, "retry nope") || !strings.Contains(errOut, "1 of 3 failed") {
		t.Errorf("retry i1 i2 nope: exit %d\n%s%s", code, out, errOut)
	}
	waitDead(3)
	code, out, errOut = runCmd(t, "", nil, "inbox", "retry", "--dead", "--event", "push", "--inbox", dir)
	if code != exitOK || strings.Count(out, "stored again") != 2 || !strings.Contains(out, "p1") || !strings.Contains(out, "p2") {
		t.Errorf("retry --dead --event push: exit %d\n%s%s", code, out, errOut)
	}
	waitDead(1)
	code, out, errOut = runCmd(t, "", nil, "inbox", "retry", "--dead", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "i3: stored again") {
		t.Errorf("retry --dead: exit %d\n%s%s", code, out, errOut)
	}
	waitDead(0)
	for _, id := range ids {
		rec.waitFor(t, id)
	}
	code, out, _ = runCmd(t, "", nil, "inbox", "retry", "--dead", "--inbox", dir)
	if code != exitOK || !strings.Contains(out, "no dead letter") {
		t.Errorf("retry --dead with none: exit %d %s", code, out)
	}
}

package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"forgehooks.dev/forgehooks/webhooks"
)

// publishForged publishes, straight to the inbox's subject of the NATS at
// url, messages with every header the inbox writes forged, as anyone
// allowed to publish there without the inbox key could: no seal, a made-up
// seal, a body that is not JSON. It returns their ids and the reason each
// dead letter must give.
func publishForged(t *testing.T, url string) map[string]string {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	want := map[string]string{"forged-unsealed": "unsealed", "forged-sealed": "bad seal", "forged-notjson": "unsealed"}
	for id := range want {
		body := []byte(`{"zen":"forged"}`)
		if id == "forged-notjson" {
			body = []byte("not json, 900 KB in the attack")
		}
		m := &nats.Msg{Subject: "FORGEHOOKS.in.q", Data: body, Header: nats.Header{}}
		for k, v := range map[string]string{
			"Forgehooks-Version": "1", "Forgehooks-Event": "push", "Forgehooks-Delivery": id, "Forgehooks-Tenant": "acme",
			"Forgehooks-Signature": "sha256=" + strings.Repeat("0", 64), "Forgehooks-Size": strconv.Itoa(len(body)),
			"Forgehooks-Received-At": time.Now().UTC().Format(time.RFC3339Nano), "Forgehooks-Repository": "o/r",
			webhooks.HeaderEvent: "push", webhooks.HeaderDelivery: id, "X-Forge-Tenant": "acme",
		} {
			m.Header.Set(k, v)
		}
		if id == "forged-sealed" {
			m.Header.Set("Forgehooks-Seal", "v1="+strings.Repeat("A", 43))
		}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestNATSForgedNotForwarded: messages published straight to the inbox's
// subject, every inbox header forged, are neither run nor forwarded by
// 'work' nor by a clustered 'serve': each is a dead letter at once (one
// attempt) whose reason says unsealed or bad seal, logged with its
// subject, counted; a delivery a receiver stored is forwarded.
func TestNATSForgedNotForwarded(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"work", "serve"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			url := plainNATS(t)
			target := &idTarget{ids: map[string]int{}}
			tsrv := httptest.NewServer(target)
			defer tsrv.Close()
			args := []string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--nats", url, "--replicas", "1"}
			if mode == "work" {
				args = append(args, "--workers", "0")
			} else {
				args = append(args, "--forward", tsrv.URL)
			}
			sv := start(t, nil, args...)
			runner := sv
			if mode == "work" {
				runner = start(t, nil, "work", "--nats", url, "--forward", tsrv.URL)
			}
			want := publishForged(t, url)
			hook := "http://" + sv.addr + webhooks.DefaultPath
			if code, ans := deliver(t, hook, "push", "good-1", []byte(`{"zen":"real"}`), nil); code != http.StatusAccepted {
				t.Fatalf("good-1: %d %s", code, ans)
			}
			var dead []struct {
				ID       string
				Attempts []struct {
					Err string `json:"error"`
				}
			}
			deadline := time.Now().Add(testTimeout)
			for {
				code, out, errOut := runCmd(t, "", nil, "inbox", "ls", "--json", "--status", "dead", "--nats", url)
				if code != exitOK {
					t.Fatalf("inbox ls: %d %s", code, errOut)
				}
				if err := json.Unmarshal([]byte(out), &dead); err != nil {
					t.Fatalf("inbox ls --json: %v: %s", err, out)
				}
				target.mu.Lock()
				good := target.ids["good-1"]
				target.mu.Unlock()
				if len(dead) == len(want) && good == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d dead letters, good-1 forwarded %d times; log:\n%s", len(dead), good, runner.stderr)
				}
				time.Sleep(50 * time.Millisecond)
			}
			target.mu.Lock()
			for id := range want {
				if n := target.ids[id]; n != 0 {
					t.Errorf("%s forwarded %d times", id, n)
				}
			}
			target.mu.Unlock()
			for _, d := range dead {
				if len(d.Attempts) != 1 || !strings.Contains(d.Attempts[0].Err, want[d.ID]) {
					t.Errorf("dead letter %s: %+v, want one attempt refused: %s", d.ID, d.Attempts, want[d.ID])
				}
			}
			log := runner.stderr.String()
			if n := strings.Count(log, "moved to the dead letters"); n != len(want) || !strings.Contains(log, "FORGEHOOKS.in.q") {
				t.Errorf("%d log lines of a refused message (want %d, naming the subject):\n%s", n, len(want), log)
			}
		})
	}
}

// TestNATSInboxKeyRequired: serve, work and inbox with --nats and no inbox
// key refuse to start (exit 2) naming --inbox-key-file and
// FORGEHOOKS_INBOX_KEY; a key that is not hex, too short, or in a file that
// others may read is refused without echoing it; --insecure-unsealed passes.
func TestNATSInboxKeyRequired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open.key")
	if err := os.WriteFile(open, []byte(testInboxKey), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	noKey := map[string]string{inboxKeyEnv: ""}
	for _, cmd := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret},
		{"work", "--forward", "http://127.0.0.1:9/x"},
		{"inbox", "ls"},
	} {
		base := append(cmd, "--nats", "nats://127.0.0.1:1")
		for _, tc := range []struct {
			name string
			env  map[string]string
			args []string
			want string
		}{
			{"no key", noKey, nil, "--inbox-key-file FILE or " + inboxKeyEnv},
			{"not hex", map[string]string{inboxKeyEnv: "secret-not-hex-" + strings.Repeat("x", 60)}, nil, inboxKeyEnv + ": inbox: the key is not hex"},
			{"short", map[string]string{inboxKeyEnv: testInboxKey[:60]}, nil, "at least 32 needed"},
			{"file open to others", noKey, []string{"--inbox-key-file", open}, "chmod 600"},
			{"both", nil, []string{"--inbox-key-file", open}, "exclude each other"},
		} {
			code, _, errOut := runCmd(t, "", tc.env, append(base, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s, %s: exit %d, want %d and %q:\n%s", cmd[0], tc.name, code, exitUsage, tc.want, errOut)
			}
			if strings.Contains(errOut, "xxxxxxxx") || strings.Contains(errOut, testInboxKey[10:30]) {
				t.Errorf("%s, %s: the error echoes the key:\n%s", cmd[0], tc.name, errOut)
			}
		}
		// Past the key's check, the connection is what fails.
		code, _, errOut := runCmd(t, "", noKey, append(base, "--insecure-unsealed")...)
		if code == exitUsage || strings.Contains(errOut, "--inbox-key-file") {
			t.Errorf("%s --insecure-unsealed: exit %d:\n%s", cmd[0], code, errOut)
		}
	}
	code, _, errOut := runCmd(t, "", nil, "inbox", "ls", "--inbox", dir, "--inbox-key-file", open)
	if code != exitUsage || !strings.Contains(errOut, "need --nats") {
		t.Errorf("--inbox-key-file with --inbox: exit %d:\n%s", code, errOut)
	}
}

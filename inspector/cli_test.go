package inspector_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inspector"
)

// TestCommandsReproduce runs the detail's `forgehooks send` and curl commands
// in bash, on the downloaded payload, and checks the same delivery (id,
// event, bytes) arrives again, verified.
func TestCommandsReproduce(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := forgehooksBinary(t)
	h := newHarness(t, inspector.Options{})
	id := "repro 'quoted' $(id)"
	body := []byte(`{"action":"opened","issue":{"title":"again"}}`)
	if code := h.post(t, "issues", id, body, testSecret); code != 200 {
		t.Fatal(code)
	}
	var d struct{ Send, Curl string }
	if code := getJSON(t, h.insp, "/api/delivery?key=d:"+strings.ReplaceAll(id, " ", "%20"), &d); code != 200 {
		t.Fatal(code)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "payload.json"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	cmds := []string{d.Send}
	if _, err := exec.LookPath("curl"); err == nil {
		cmds = append(cmds, d.Curl)
	} else {
		t.Log("no curl: the curl command is not run")
	}
	for _, c := range cmds {
		cmd := exec.Command(bash, "-c", c)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FORGE_WEBHOOK_SECRET="+testSecret, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	recs, _ := h.insp.Ring().List(context.Background(), delivery.ListOptions{})
	if len(recs) != 1+len(cmds) {
		t.Fatalf("%d deliveries, want %d", len(recs), 1+len(cmds))
	}
	for _, r := range recs {
		// A list carries no payload; its size is kept.
		if r.ID != id || r.Name != "issues" || r.Payload != nil || r.Size != int64(len(body)) || !r.Verified || r.Status != delivery.StatusHandled {
			t.Errorf("delivery %q %q %s size %d verified=%v %s", r.ID, r.Name, r.Payload, r.Size, r.Verified, r.Status)
		}
	}
	if r, err := h.insp.Ring().Get(context.Background(), id); err != nil || string(r.Payload) != string(body) {
		t.Errorf("Get: %v %s", err, r.Payload)
	}
}

// TestServeUI runs `forgehooks serve --ui`: the page answers on loopback, a
// delivery sent with `forgehooks send` is listed with its Go type from
// package payloads, and a non-loopback --ui without a token is refused.
func TestServeUI(t *testing.T) {
	t.Parallel()
	bin := forgehooksBinary(t)
	env := append(os.Environ(), "FORGE_WEBHOOK_SECRET="+testSecret, "UI_TOKEN=tok-123")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--ui", "0.0.0.0:0"}, "is not a loopback address"},
		{[]string{"--ui", "127.0.0.1:0", "--ui-token-env", "NO_SUCH_VARIABLE_SET"}, "unset or empty"},
		{[]string{"--ui-token-env", "UI_TOKEN"}, "--ui-token-env needs --ui"},
	} {
		cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("serve %v: %v\n%s", tc.args, err, out)
		}
	}

	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--ui", "127.0.0.1:0")
	cmd.Env = env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	urls := map[string]string{}
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`msg="forgehooks: (receiving deliveries|inspector page)" url=(\S+)`)
	for len(urls) < 2 && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			urls[m[1]] = m[2]
		}
	}
	go io.Copy(io.Discard, stderr)
	hook, page := urls["receiving deliveries"], urls["inspector page"]
	if hook == "" || page == "" {
		t.Fatalf("serve logged no URLs: %v", urls)
	}
	send := exec.Command(bin, "send", "--url", hook, "--event", "issues.opened", "--delivery", "serve-ui-1")
	send.Env = env
	if out, err := send.CombinedOutput(); err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	var d struct{ TypeName, Status, Send string }
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(page + "api/delivery?key=d:serve-ui-1")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 200 {
			decodeJSON(t, resp, &d)
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the delivery never showed: %d", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d.TypeName != "*payloads.IssuesOpenedEvent" || d.Status != "handled" || !strings.Contains(d.Send, "--url '"+hook+"'") {
		t.Errorf("detail %+v", d)
	}
}

package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/webhookstest"
)

// 'forgehooks send --event NAME --sample N' sends the bytes of
// webhookstest.Payloads(NAME)[N], for every name and every N (followed by
// whitespace only: a body of its own for each delivery), and N past the last
// is a usage error.
func TestSendSamplesArePayloads(t *testing.T) {
	t.Parallel()
	names := webhookstest.Names()
	if len(names) < 300 {
		t.Fatalf("%d names with samples", len(names))
	}
	for _, name := range names {
		all := webhookstest.Payloads(name)
		for n, want := range all {
			code, stdout, stderr := runCmd(t, "", map[string]string{"FORGE_WEBHOOK_SECRET": "a secret for tests only"},
				"send", "--print", "--event", name, "--sample", strconv.Itoa(n))
			if code != exitOK {
				t.Fatalf("send --event %s --sample %d: exit %d: %s", name, n, code, stderr)
			}
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(stdout)))
			if err != nil {
				t.Fatalf("send --event %s --sample %d printed no request: %v", name, n, err)
			}
			body, _ := io.ReadAll(req.Body)
			rest, ok := bytes.CutPrefix(body, want)
			if !ok || len(bytes.Trim(rest, " \t\r\n")) != 0 {
				t.Fatalf("send --event %s --sample %d sent\n%.200s\nwant webhookstest.Payloads(%q)[%d]\n%.200s", name, n, body, name, n, want)
			}
		}
		if code, _, stderr := runCmd(t, "", map[string]string{"FORGE_WEBHOOK_SECRET": "s"}, "send", "--print", "--event", name, "--sample", strconv.Itoa(len(all))); code != exitUsage || !strings.Contains(stderr, "samples (0 to") {
			t.Errorf("send --event %s --sample %d: exit %d, %s", name, len(all), code, stderr)
		}
	}
}

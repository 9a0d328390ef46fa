package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/internal/syncbuf"
	"forgehooks.dev/forgehooks/webhooks"
)

// testTimeout bounds each test that runs servers, so that one that hangs fails.
const testTimeout = 90 * time.Second

const testSecret = "forgehooks test secret"

// testInboxKey is the inbox key (hex) that every test command gets in its
// environment (inboxKeyEnv), as a deployment with --nats would give it;
// testInboxKeyEnv is its entry for a child process's environment.
const (
	testInboxKey    = "6669726d2d746573742d696e626f782d6b65792d3031323334353637383961626364"
	testInboxKeyEnv = inboxKeyEnv + "=" + testInboxKey
)

// withInboxKey returns getenv (nil: an empty environment) with testInboxKey
// for inboxKeyEnv where getenv has none.
func withInboxKey(getenv func(string) string) func(string) string {
	return func(k string) string {
		v := ""
		if getenv != nil {
			v = getenv(k)
		}
		if v == "" && k == inboxKeyEnv {
			return testInboxKey
		}
		return v
	}
}

// syncBuffer is a buffer safe for a server writing while a test reads.
type syncBuffer = syncbuf.Buffer

// runCmd runs a command to its end with stdin and an environment, which
// holds testInboxKey unless env names inboxKeyEnv (empty: none).
func runCmd(t *testing.T, stdin string, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncBuffer
	getenv := func(k string) string {
		if v, ok := env[k]; ok || k != inboxKeyEnv {
			return v
		}
		return testInboxKey
	}
	c := &cli{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, getenv: getenv}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	code = run(ctx, c, args)
	return code, out.String(), errOut.String()
}

// proc is a long-running command (serve, proxy, relay) run in the test.
type proc struct {
	t      *testing.T
	cancel context.CancelFunc
	code   chan int
	stderr *syncBuffer
	addr   string
}

// start runs args until the test ends or stop is called; its environment
// holds testInboxKey (withInboxKey). For serve and proxy it
// waits until they listen, and records the address.
func start(t *testing.T, c *cli, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	p := &proc{t: t, cancel: cancel, code: make(chan int, 1), stderr: &syncBuffer{}}
	listening := make(chan string, 1)
	if c == nil {
		c = &cli{}
	}
	c.stdin, c.stdout, c.stderr = strings.NewReader(""), p.stderr, p.stderr
	c.getenv = withInboxKey(c.getenv)
	prev := c.listening // the test's own, told first
	c.listening = func(addr string) {
		if prev != nil {
			prev(addr)
		}
		listening <- addr
	}
	go func() { p.code <- run(ctx, c, args) }()
	if args[0] == "serve" || args[0] == "proxy" {
		select {
		case p.addr = <-listening:
		case code := <-p.code:
			t.Fatalf("%s exited %d: %s", args[0], code, p.stderr)
		case <-ctx.Done():
			t.Fatalf("%s did not start listening", args[0])
		}
	}
	t.Cleanup(func() { p.stop() })
	return p
}

// stop ends the command as SIGINT does and returns its exit status.
func (p *proc) stop() int {
	p.cancel()
	select {
	case code := <-p.code:
		p.code <- code // so that stop can be called again
		return code
	case <-time.After(testTimeout):
		p.t.Fatalf("command did not stop; its log:\n%s", p.stderr)
		return -1
	}
}

// received records what reaches a Webhooks' handlers.
type received struct {
	mu     sync.Mutex
	events []emitter.Event
	notify chan struct{}
}

func newReceived() *received { return &received{notify: make(chan struct{}, 1)} }

func (r *received) setup(wh *webhooks.Webhooks) {
	wh.OnAny(func(_ context.Context, e emitter.Event) error {
		r.mu.Lock()
		e.Payload = bytes.Clone(e.Payload)
		r.events = append(r.events, e)
		r.mu.Unlock()
		select {
		case r.notify <- struct{}{}:
		default:
		}
		return nil
	})
}

// waitFor waits until a delivery with id was handled, and returns everything
// handled so far.
func (r *received) waitFor(t *testing.T, id string) []emitter.Event {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		r.mu.Lock()
		for _, e := range r.events {
			if e.ID == id {
				out := append([]emitter.Event(nil), r.events...)
				r.mu.Unlock()
				return out
			}
		}
		n := len(r.events)
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("delivery %q was not handled (%d were)", id, n)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"forgehooks.dev/forgehooks/internal/browsertest"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// The browser test drives a real headless Chromium, as package inspector's
// do (internal/browsertest): without one it skips, except under CI=true, where
// it fails.

// browserTab starts Chromium with a fresh profile and returns a tab.
func browserTab(t *testing.T) context.Context { return browsertest.Start(t) }

func browse(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// untilJS waits for a JavaScript condition to hold in the page.
func untilJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ok, err := chromedp.Run(sctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, expr, err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserInboxDeadLetter: serve --inbox --ui in a real browser. A
// delivery whose handler fails turns dead on the page, live, after its 2
// attempts; a duplicate and a forged request show as such; the detail's
// Retry button runs the dead letter again through the inbox (attempt 3,
// handled), Replay once more (attempt 4); no CSP violation.
func TestBrowserInboxDeadLetter(t *testing.T) {
	ctx := browserTab(t)
	var failing atomic.Bool
	failing.Store(true)
	var runs atomic.Int32
	setup := func(wh *webhooks.Webhooks) {
		wh.On("issues", func(ctx context.Context, e emitter.Event) error {
			runs.Add(1)
			info, _ := webhooks.DeliveryFrom(ctx)
			if failing.Load() {
				return fmt.Errorf("downstream refused attempt %d", info.Attempt)
			}
			return nil
		})
	}
	sv := start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret,
		"--inbox", t.TempDir(), "--retry-delays", "1ms", "--ui", "127.0.0.1:0")
	pageURL := uiURL(t, sv)
	browse(t, ctx, "open", chromedp.Navigate(pageURL))
	untilJS(t, ctx, "live", `document.getElementById('live').dataset.state === 'live'`)

	hook := "http://" + sv.addr + webhooks.DefaultPath
	body := []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"o/r"}}`)
	if code, ans := deliver(t, hook, "issues", "inbox-1", body, nil); code != 202 {
		t.Fatalf("%d %s", code, ans)
	}
	if code, ans := deliver(t, hook, "issues", "inbox-1", body, nil); code != 200 {
		t.Fatalf("duplicate: %d %s", code, ans)
	}
	code, _, _ := runCmd(t, "", nil, "send", "--url", hook, "--secret", "wrong", "--event", "issues.opened", "--delivery", "forged-1")
	if code != exitFailure {
		t.Fatalf("send with a wrong secret: exit %d", code)
	}
	row := `document.querySelector('#tbody tr[data-key="d:inbox-1"]')`
	untilJS(t, ctx, "dead row, live", row+` && `+row+`.dataset.status === 'dead' && document.querySelectorAll('#tbody tr').length === 3`)
	list := evalJS[string](t, ctx, `document.getElementById('tbody').innerText`)
	for _, want := range []string{"duplicate", "rejected", "dead"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q:\n%s", want, list)
		}
	}
	browse(t, ctx, "open the dead letter", chromedp.Click(chromedp.CSS(`#tbody tr[data-key="d:inbox-1"] a.open`)))
	untilJS(t, ctx, "2 attempts", `document.querySelectorAll('#d-attempts li').length === 2 && !document.getElementById('a-retry').disabled`)
	if a := evalJS[string](t, ctx, `document.getElementById('d-attempts').innerText`); !strings.Contains(a, "downstream refused attempt 2") {
		t.Errorf("attempts:\n%s", a)
	}
	failing.Store(false)
	browse(t, ctx, "retry", chromedp.Click(chromedp.ID("a-retry")))
	untilJS(t, ctx, "handled", `document.getElementById('d-summary').innerText.includes('handled') && document.querySelectorAll('#d-attempts li').length === 3`)
	browse(t, ctx, "replay", chromedp.Click(chromedp.ID("a-replay")))
	untilJS(t, ctx, "attempt 4", `document.querySelectorAll('#d-attempts li').length === 4`)
	if n := runs.Load(); n != 4 {
		t.Errorf("the handler ran %d times, want 4", n)
	}
	if v := evalJS[[]string](t, ctx, `window.__violations`); len(v) != 0 {
		t.Errorf("CSP violations: %v", v)
	}
}

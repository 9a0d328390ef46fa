package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"forgehooks.dev/forgehooks/internal/browsertest"
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
	return browsertest.Eval[T](t, ctx, expr)
}

// untilJS waits for a JavaScript condition to hold in the page.
func untilJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	browsertest.Until(t, ctx, what, expr, pageText)
}

// pageText is the page's text, for a failure message.
func pageText(ctx context.Context) string {
	body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return body
}

// TestBrowserInboxDeadLetter: serve --inbox --ui in a real browser. A
// delivery whose handler fails turns dead on the page, live, after its 2
// attempts; a duplicate and a forged request show as such; the detail's
// Retry button runs the dead letter again through the inbox (attempt 3,
// handled), Replay once more (attempt 4); no CSP violation.
func TestBrowserInboxDeadLetter(t *testing.T) {
	t.Parallel()
	ctx := browserTab(t)
	sv, failing, runs, release := startFailingInbox(t)
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
	release()
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

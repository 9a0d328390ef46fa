package inspector_test

import (
	"context"
	"strings"
	"testing"

	"forgehooks.dev/forgehooks/inspector"
	"github.com/chromedp/chromedp"
)

// TestBrowserLive opens the page in Chromium, sends deliveries with the
// forgehooks binary (`forgehooks send`), and checks what a user would: rows
// appear without a reload, the filters, a detail, replay (the handler's log
// line for attempt 2) and the retry of a failed delivery. No CSP violation
// may occur.
func TestBrowserLive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, inspector.Options{})
	ctx := browser(t)
	do(t, ctx, "open the page", chromedp.Navigate(h.uiURL))
	until(t, ctx, "the live stream", `document.getElementById('live').dataset.state === 'live'`)
	eval[bool](t, ctx, `window.__notReloaded = true`)
	if n := rowCount(t, ctx); n != 0 {
		t.Fatalf("%d rows before any delivery", n)
	}

	// Deliveries, each sent by the CLI as the forge would.
	sends := []struct {
		event, id, secret string
		ok                bool
	}{
		{"issues.opened", "11111111-aaaa-4000-8000-000000000001", testSecret, true},
		{"push", "11111111-aaaa-4000-8000-000000000002", testSecret, true},
		{"issues.closed", "11111111-aaaa-4000-8000-000000000003", "not-the-secret", false},
	}
	for _, s := range sends {
		out, err := h.send(t, s.secret, "--event", s.event, "--delivery", s.id)
		if (err == nil) != s.ok {
			t.Fatalf("forgehooks send --event %s: %v\n%s", s.event, err, out)
		}
	}
	until(t, ctx, "three live rows", `document.querySelectorAll('#tbody tr').length === 3`)
	if !eval[bool](t, ctx, `window.__notReloaded === true`) {
		t.Fatal("the page reloaded to show the rows")
	}
	// Newest first: the rejected request on top.
	keys := eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr')].map((tr) => tr.dataset.key)`)
	if keys[1] != "d:"+sends[1].id || keys[2] != "d:"+sends[0].id || !strings.HasPrefix(keys[0], "r:") {
		t.Fatalf("rows in order %q", keys)
	}
	rejected := eval[string](t, ctx, `document.querySelector('#tbody tr[data-key^="r:"]').innerText`)
	for _, want := range []string{"issues", sends[2].id, "unverified", "rejected 400"} {
		if !strings.Contains(rejected, want) {
			t.Errorf("rejected row %q lacks %q", rejected, want)
		}
	}
	opened := eval[string](t, ctx, `document.querySelector(`+jsString(rowSel("d:"+sends[0].id))+`).innerText`)
	for _, want := range []string{"issues.opened", sends[0].id, "Codertocat/Hello-World", "Codertocat", "valid", "handled"} {
		if !strings.Contains(opened, want) {
			t.Errorf("issues.opened row %q lacks %q", opened, want)
		}
	}

	// Filters: by event, by status, by free text.
	do(t, ctx, "filter by event", chromedp.SendKeys(chromedp.ID("f-event"), "push"))
	until(t, ctx, "only the push row", `document.querySelectorAll('#tbody tr').length === 1 && document.querySelector('#tbody tr').dataset.key === `+jsString("d:"+sends[1].id))
	setField(t, ctx, "f-event", "")
	until(t, ctx, "all rows again", `document.querySelectorAll('#tbody tr').length === 3`)
	setField(t, ctx, "f-status", "rejected")
	until(t, ctx, "only the rejected row", `document.querySelectorAll('#tbody tr').length === 1 && document.querySelector('#tbody tr').dataset.status === 'rejected'`)
	setField(t, ctx, "f-status", "")
	do(t, ctx, "search", chromedp.SendKeys(chromedp.ID("f-q"), "000000000002"))
	until(t, ctx, "only the row of that id", `document.querySelectorAll('#tbody tr').length === 1 && document.querySelector('#tbody tr').dataset.key === `+jsString("d:"+sends[1].id))
	setField(t, ctx, "f-q", "")
	until(t, ctx, "all rows again", `document.querySelectorAll('#tbody tr').length === 3`)

	// A row that arrives while a filter is on shows only when it matches.
	do(t, ctx, "filter by event", chromedp.SendKeys(chromedp.ID("f-event"), "issues.opened"))
	until(t, ctx, "the issues.opened row", `document.querySelectorAll('#tbody tr').length === 1`)
	for _, ev := range []string{"ping", "issues.opened"} {
		if out, err := h.send(t, testSecret, "--event", ev); err != nil {
			t.Fatalf("send %s: %v\n%s", ev, err, out)
		}
	}
	until(t, ctx, "the new issues.opened row, not the ping", `document.querySelectorAll('#tbody tr').length === 2`)
	setField(t, ctx, "f-event", "")
	until(t, ctx, "all five rows", `document.querySelectorAll('#tbody tr').length === 5`)

	// The keyboard: j moves to the first row, Enter opens it.
	do(t, ctx, "open the newest row with the keyboard", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`, chromedp.EvalIgnoreExceptions))
	do(t, ctx, "press j, Enter", chromedp.KeyEvent("j"), chromedp.KeyEvent("\r"))
	until(t, ctx, "a detail", `!document.getElementById('detail-view').hidden && document.getElementById('d-title').textContent !== ''`)
	do(t, ctx, "Esc back to the list", chromedp.KeyEvent("\x1b"))
	until(t, ctx, "the list", `!document.getElementById('list-view').hidden`)

	// The detail of issues.opened.
	do(t, ctx, "open the detail", chromedp.Click(chromedp.CSS(rowSel("d:"+sends[0].id)+" a.open")))
	until(t, ctx, "the detail", `document.getElementById('d-summary').innerText.includes(`+jsString(sends[0].id)+`) && document.querySelectorAll('#d-attempts li').length === 1`)
	if title := eval[string](t, ctx, `document.getElementById('d-title').textContent`); title != "issues.opened" {
		t.Errorf("detail title %q", title)
	}
	summary := eval[string](t, ctx, `document.getElementById('d-summary').innerText`)
	for _, want := range []string{sends[0].id, "*payloads.IssuesOpenedEvent", "✓ valid", "handled", "Codertocat/Hello-World"} {
		if !strings.Contains(summary, want) {
			t.Errorf("detail summary %q lacks %q", summary, want)
		}
	}
	headers := eval[string](t, ctx, `document.getElementById('d-headers').innerText`)
	if !strings.Contains(headers, "X-Hub-Signature-256\t[redacted]") || strings.Contains(headers, "sha256=") {
		t.Errorf("headers show a signature:\n%s", headers)
	}
	send := eval[string](t, ctx, `document.getElementById('d-send').textContent`)
	if !strings.Contains(send, "forgehooks send --url '"+h.hookURL+"' --event 'issues' --delivery '"+sends[0].id+"' payload.json") {
		t.Errorf("send command %q", send)
	}
	// The payload tree: collapsible, searchable.
	do(t, ctx, "search the payload", chromedp.SendKeys(chromedp.ID("p-search"), "Codertocat"))
	until(t, ctx, "search hits", `document.querySelectorAll('#p-tree .hit').length > 0 && /\d+ match/.test(document.getElementById('p-hits').textContent)`)
	do(t, ctx, "collapse all", chromedp.Click(chromedp.ID("p-collapse")))
	until(t, ctx, "collapsed", `[...document.querySelectorAll('#p-tree details')].filter((d) => d.open).length === 1`)
	do(t, ctx, "raw view", chromedp.Click(chromedp.ID("p-toggle")))
	until(t, ctx, "the raw payload", `!document.getElementById('p-raw').hidden && document.getElementById('p-raw').textContent.includes('"opened"')`)

	// Copy puts the payload, byte for byte, on the clipboard.
	grantClipboard(t, ctx, h.uiURL)
	do(t, ctx, "copy", chromedp.Click(chromedp.ID("p-copy")))
	until(t, ctx, "copied", `document.getElementById('a-result').textContent === 'payload copied'`)
	clip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("reading the clipboard: %v", err)
	}
	if got, _ := h.insp.Ring().Get(context.Background(), sends[0].id); clip != string(got.Payload) {
		t.Errorf("clipboard holds %d bytes, not the payload's %d", len(clip), len(got.Payload))
	}

	// Replay: the handler runs again, as attempt 2.
	do(t, ctx, "replay", chromedp.Click(chromedp.ID("a-replay")))
	until(t, ctx, "attempt 2", `document.querySelectorAll('#d-attempts li').length === 2 && document.getElementById('a-result').textContent === 'replay: done'`)
	if line := "id=" + sends[0].id + " event=issues action=opened attempt=2"; !strings.Contains(h.logs.String(), line) {
		t.Errorf("no handler log line %q in:\n%s", line, h.logs.String())
	}

	// A delivery whose handler panics is "failed"; retry runs it again.
	h.failing.Store(true)
	const failID = "11111111-aaaa-4000-8000-000000000004"
	if out, err := h.send(t, testSecret, "--event", "issues.closed", "--delivery", failID); err == nil {
		t.Fatalf("send to a panicking handler succeeded: %s", out)
	}
	do(t, ctx, "back to the list", chromedp.Click(chromedp.ID("back")))
	until(t, ctx, "the failed row", `document.querySelector(`+jsString(rowSel("d:"+failID))+`) && document.querySelector(`+jsString(rowSel("d:"+failID))+`).dataset.status === 'failed'`)
	do(t, ctx, "open the failed one", chromedp.Click(chromedp.CSS(rowSel("d:"+failID)+" a.open")))
	until(t, ctx, "its panic", `document.querySelectorAll('#d-attempts li').length === 1 && document.querySelector('#d-attempts pre.err') && document.querySelector('#d-attempts details pre.stack')`)
	if e := eval[string](t, ctx, `document.querySelector('#d-attempts pre.err').textContent`); !strings.Contains(e, "handler exploded on a closed issue") {
		t.Errorf("attempt error %q", e)
	}
	if s := eval[string](t, ctx, `document.querySelector('#d-attempts pre.stack').textContent`); !strings.Contains(s, "goroutine") {
		t.Errorf("panic stack %q", s)
	}
	h.failing.Store(false)
	do(t, ctx, "retry", chromedp.Click(chromedp.ID("a-retry")))
	until(t, ctx, "handled on attempt 2", `document.querySelectorAll('#d-attempts li').length === 2 && document.getElementById('d-summary').innerText.includes('handled') && document.getElementById('a-retry').disabled`)
	if line := "id=" + failID + " event=issues action=closed attempt=2"; !strings.Contains(h.logs.String(), line) {
		t.Errorf("no handler log line %q in:\n%s", line, h.logs.String())
	}
	do(t, ctx, "back to the list", chromedp.Click(chromedp.ID("back")))
	until(t, ctx, "the row handled, live", `document.querySelector(`+jsString(rowSel("d:"+failID))+`).dataset.status === 'handled'`)

	if v := violations(t, ctx); len(v) != 0 {
		t.Errorf("CSP violations in the page: %q", v)
	}
	if n := h.insp.CSPViolations(); n != 0 {
		t.Errorf("%d CSP violation reports", n)
	}
}

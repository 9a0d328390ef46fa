package inspector_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"forgehooks.dev/forgehooks/internal/browsertest"
)

// The browser tests drive a real headless Chromium (internal/browsertest):
// without one they skip, except under CI=true, where they fail.

// browser starts Chromium with a fresh profile and returns a tab's context.
func browser(t *testing.T) context.Context { return browsertest.Start(t) }

// colorScheme makes the page see prefers-color-scheme: scheme.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return chromedp.Void{}, err
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage: %s", what, err, pageState(ctx))
	}
}

// eval runs a JavaScript expression in the page and decodes its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return browsertest.Eval[T](t, ctx, expr)
}

// until waits for a JavaScript condition to hold in the page.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	browsertest.Until(t, ctx, what, expr, pageState)
}

// pageState describes the page for a failure message.
func pageState(ctx context.Context) string {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(sctx, chromedp.Evaluate[string](`JSON.stringify({
		hash: location.hash, live: document.getElementById('live').textContent,
		rows: [...document.querySelectorAll('#tbody tr')].map((tr) => tr.innerText.replace(/\s+/g, ' ')),
		title: document.getElementById('d-title').textContent,
		attempts: [...document.querySelectorAll('#d-attempts li')].map((li) => li.innerText),
		result: document.getElementById('a-result').textContent,
		violations: window.__violations})`))
	if err != nil {
		return "(unavailable: " + err.Error() + ")"
	}
	return s
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rowSel is the CSS selector of the list row of key.
func rowSel(key string) string {
	return `#tbody tr[data-key=` + jsString(key) + `]`
}

func rowCount(t *testing.T, ctx context.Context) int {
	return eval[int](t, ctx, `document.querySelectorAll('#tbody tr').length`)
}

func violations(t *testing.T, ctx context.Context) []string {
	return eval[[]string](t, ctx, `window.__violations`)
}

// setField sets a form field's value as a user's edit would, with the
// event the page listens to.
func setField(t *testing.T, ctx context.Context, id, value string) {
	t.Helper()
	eval[bool](t, ctx, `(() => { const e = document.getElementById(`+jsString(id)+`); e.value = `+jsString(value)+`;
		e.dispatchEvent(new Event(e.tagName === 'SELECT' ? 'change' : 'input')); return true; })()`)
}

// grantClipboard lets the page at origin use the clipboard without asking.
func grantClipboard(t *testing.T, ctx context.Context, origin string) {
	t.Helper()
	params := map[string]any{"origin": strings.TrimSuffix(origin, "/"), "permissions": []string{"clipboardReadWrite", "clipboardSanitizedWrite"}}
	if err := chromedp.FromContext(ctx).Browser.Call(ctx, "Browser.grantPermissions", params, nil); err != nil {
		t.Fatalf("granting the clipboard: %v", err)
	}
}

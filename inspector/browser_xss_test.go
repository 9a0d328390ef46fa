package inspector_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"github.com/chromedp/chromedp"
)

// xssCorpus are strings a delivery can carry that would run script, or
// mislead a reader, if the page put them into HTML or a URL. Each script sets
// window.__xss, which the test checks stays unset.
var xssCorpus = []string{
	`<script>window.__xss='script'</script>`,
	`<img src=x onerror="window.__xss='img'">`,
	`<svg/onload=window.__xss='svg'>`,
	`javascript:window.__xss='js-url'`,
	`"><iframe srcdoc="<script>parent.__xss='iframe'</script>"></iframe>`,
	`' onmouseover='window.__xss="attr"' x='`,
	`</textarea></pre></td><script>window.__xss='close'</script>`,
	`<a href="javascript:window.__xss='a'">click</a>`,
	`data:text/html,<script>window.__xss='data'</script>`,
	`{{constructor.constructor('window.__xss="tmpl"')()}}`,
	`${window.__xss='tpl'}`,
	"evil\u202Egnp.exe",              // right-to-left override: shows as "evilexe.png"
	"zero\u200Bwidth\u2066iso\u2069", // invisible characters
	"\u0000nul and \u001b[31mescape",
	`<style>body{display:none}</style>`,
	`<meta http-equiv="refresh" content="0;url=javascript:window.__xss='meta'">`,
}

// hostilePayload puts the corpus in titles, refs, logins, keys and URLs.
func hostilePayload(t *testing.T, i int) []byte {
	t.Helper()
	s := func(k int) string { return xssCorpus[(i+k)%len(xssCorpus)] }
	p := map[string]any{
		"action": "opened",
		"ref":    "refs/heads/" + s(1),
		"issue": map[string]any{
			"title": s(0), "body": s(2), "html_url": "javascript:window.__xss='html_url'",
			"labels": []any{map[string]any{"name": s(3), s(4): s(5)}},
			"user":   map[string]any{"login": s(6)},
		},
		"repository":  map[string]any{"full_name": s(7), "html_url": s(3)},
		"sender":      map[string]any{"login": s(8), "avatar_url": `javascript:window.__xss='avatar'`},
		s(9):          s(10),
		"__proto__":   map[string]any{"polluted": s(11)},
		"constructor": map[string]any{"prototype": map[string]any{"x": s(12)}},
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBrowserXSS renders deliveries full of hostile strings (in the list, in
// every detail with the tree expanded and searched, in the raw view, and
// rejected requests with hostile headers) and checks in the browser that no
// script ran, no element came from the data, and the Content-Security-Policy
// saw no violation. A last step breaks the policy on purpose, to show the
// violation counters work.
func TestBrowserXSS(t *testing.T) {
	t.Parallel()
	h := newHarness(t, inspector.Options{})
	ctx := browser(t)
	do(t, ctx, "open the page", chromedp.Navigate(h.uiURL))
	until(t, ctx, "the live stream", `document.getElementById('live').dataset.state === 'live'`)

	n := 0
	for i := range xssCorpus {
		// Verified deliveries, with a hostile id and event name, arriving live.
		id := strings.NewReplacer("\u0000", "", "\u001b", "").Replace(xssCorpus[i])
		event := "issues"
		if i%3 == 1 {
			event = xssCorpus[(i+5)%len(xssCorpus)]
			event = strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f {
					return -1
				}
				return r
			}, event)
		}
		// A delivery id is at most 128 bytes of printable ASCII (anything
		// else is refused, 400): a hostile string that is not one goes in
		// the event name instead.
		if len(id) > 128 || strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
			event = strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f {
					return -1
				}
				return r
			}, id)
			id = "xss-" + itoa(i)
		}
		if code := h.post(t, event, id, hostilePayload(t, i), testSecret); code != http.StatusOK {
			t.Fatalf("delivery %d: status %d", i, code)
		}
		n++
		// A rejected request with hostile headers.
		if i%2 == 0 {
			req, _ := http.NewRequest(http.MethodPost, h.hookURL, strings.NewReader(`{"x":1}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forge-Event", id)
			req.Header.Set("X-Forge-Delivery", id)
			req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
			req.Header.Set("X-Evil-"+strings.Repeat("a", i+1), id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			n++
		}
	}
	until(t, ctx, "every row", `document.querySelectorAll('#tbody tr').length === `+itoa(n))

	keys := eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr')].map((tr) => tr.dataset.key)`)
	for _, key := range keys {
		eval[bool](t, ctx, `(location.hash = `+jsString("#"+urlFragment(key))+`, true)`)
		until(t, ctx, "the detail of "+key, `document.getElementById('d-summary').children.length > 0 && document.getElementById('d-headers').children.length > 0`)
		eval[bool](t, ctx, `(document.getElementById('p-expand').click(), true)`)
		setField(t, ctx, "p-search", "script")
		if strings.HasPrefix(key, "d:") {
			until(t, ctx, "search hits in "+key, `document.querySelectorAll('#p-tree .hit').length > 0`)
		}
		eval[bool](t, ctx, `(document.getElementById('p-toggle').click(), true)`)
		until(t, ctx, "the raw view", `!document.getElementById('p-raw').hidden || !document.querySelector('#p-tree details')`)
		eval[bool](t, ctx, `(location.hash = '', true)`)
		until(t, ctx, "the list", `!document.getElementById('list-view').hidden`)
	}
	// Hover and focus every element, for handlers that wait for an event.
	eval[bool](t, ctx, `(() => { for (const e of document.querySelectorAll('*')) { for (const ev of ['mouseover', 'focus', 'click']) { if (ev !== 'click' || !e.closest('button, a')) e.dispatchEvent(new Event(ev)); } } return true; })()`)

	checks := map[string]string{
		"a script ran":                   `window.__xss !== undefined`,
		"a script element from the data": `document.querySelectorAll('script').length !== 1`,
		"an element from the data":       `document.querySelector('img, svg, iframe, style, meta[http-equiv], textarea, body a:not(.open):not(#home):not(#back):not(#p-download)') !== null`,
		"an event-handler attribute":     `[...document.querySelectorAll('*')].some((e) => [...e.attributes].some((a) => a.name.startsWith('on')))`,
		"a javascript: link":             `[...document.querySelectorAll('a')].some((a) => !a.getAttribute('href').startsWith('#') && !a.getAttribute('href').startsWith('api/payload?'))`,
		"a prototype polluted":           `({}).polluted !== undefined`,
		"the page hidden by a style":     `getComputedStyle(document.body).display === 'none'`,
	}
	for what, expr := range checks {
		if eval[bool](t, ctx, expr) {
			t.Errorf("%s (%s)", what, expr)
		}
	}
	// The strings are shown as text, with the invisible and reordering
	// characters spelled out.
	text := eval[string](t, ctx, `document.getElementById('tbody').textContent`)
	for _, want := range []string{`<script>window.__xss='script'</script>`, `evil\u202egnp.exe`, `zero\u200bwidth\u2066iso\u2069`} {
		if !strings.Contains(text, want) {
			t.Errorf("the list does not show %q as text", want)
		}
	}
	if v := violations(t, ctx); len(v) != 0 {
		t.Errorf("CSP violations in the page: %q", v)
	}
	if c := h.insp.CSPViolations(); c != 0 {
		t.Errorf("%d CSP violation reports", c)
	}

	// The control: an HTML string into innerHTML is refused (Trusted Types)
	// and reported, so a zero above means something.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('empty').innerHTML = '<b>x</b>'`)); err == nil {
		t.Error("innerHTML with a string was allowed: Trusted Types are not enforced")
	}
	until(t, ctx, "the page to see the violation", `window.__violations.length > 0`)
	deadline := time.Now().Add(20 * time.Second)
	for h.insp.CSPViolations() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the violation was never reported to csp-report")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// urlFragment escapes a key as encodeURIComponent does.
func urlFragment(key string) string {
	var b strings.Builder
	for _, c := range []byte(key) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

package inspector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/internal/corpus"
	"forgehooks.dev/forgehooks/webhooks"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// demoDeliveries is the fixed demo data set of the screenshots: corpus
// payloads with fixed ids, times and outcomes.
func demoDeliveries(t *testing.T) []webhooks.Result {
	t.Helper()
	find := func(name string) []byte {
		for _, ex := range corpus.All() {
			if ex.Name() == name && !ex.Synthetic {
				return ex.Body
			}
		}
		t.Fatalf("no corpus example of %s", name)
		return nil
	}
	t0 := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	type demo struct {
		name   string
		status int
		err    string
		dur    time.Duration
		dup    bool
	}
	demos := []demo{
		{"ping", 200, "", 180 * time.Microsecond, false},
		{"push", 200, "", 2300 * time.Microsecond, false},
		{"pull_request.opened", 200, "", 4100 * time.Microsecond, false},
		{"issues.labeled", 500, "label sync: GET https://tracker.example/api/labels: 502 Bad Gateway", 1200 * time.Millisecond, false},
		{"check_run.completed", 200, "", 900 * time.Microsecond, false},
		{"issues.opened", 400, "signature does not match event payload and secret", 95 * time.Microsecond, false},
		{"issue_comment.created", 200, "", 3700 * time.Microsecond, false},
		{"push", 200, "", 120 * time.Microsecond, true},
		{"release.published", 200, "", 12 * time.Millisecond, false},
		{"workflow_run.completed", 200, "", 1600 * time.Microsecond, false},
		{"star.created", 200, "", 210 * time.Microsecond, false},
		{"issues.opened", 200, "", 2900 * time.Microsecond, false},
	}
	var out []webhooks.Result
	for i, d := range demos {
		event, action, _ := cut(d.name)
		body := find(d.name)
		res := webhooks.Result{
			ID:   fmt.Sprintf("5f3c9a%02d-7b1e-4c2a-9d4f-%012d", i, 81340+i*7),
			Name: event, Action: action, Status: d.status, Duration: d.dur, Verified: true, Payload: body,
			ReceivedAt: t0.Add(time.Duration(i)*41*time.Second + time.Duration(i*137)*time.Millisecond),
			Header: http.Header{
				"Content-Type": {"application/json"}, "User-Agent": {"forge-hookshot/8f2a1c"},
				"X-Forge-Event": {event}, "X-Forge-Hook-Id": {"421337"}, "X-Hub-Signature-256": {"sha256=…"},
			},
		}
		res.Header.Set("X-Forge-Delivery", res.ID)
		if d.err != "" {
			res.Err = errors.New(d.err)
		}
		if d.status == 400 {
			res.Verified, res.Payload, res.Action = false, nil, ""
		}
		if d.dup {
			res.Duplicate = true
			res.ID = out[1].ID
		}
		out = append(out, res)
	}
	return out
}

func cut(name string) (string, string, bool) {
	for i := range len(name) {
		if name[i] == '.' {
			return name[:i], name[i+1:], true
		}
	}
	return name, "", false
}

// TestBrowserScreenshots renders the demo data set, list and detail, light
// and dark. With FORGEHOOKS_SCREENSHOTS=dir it writes them there as PNGs
// (`make screenshots` writes docs/screenshots).
func TestBrowserScreenshots(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("FORGEHOOKS_SCREENSHOTS")
	ctx := browser(t) // first: without Chromium the test skips before building the demo set
	insp := inspector.New(inspector.Options{WebhookURL: "http://127.0.0.1:3000" + webhooks.DefaultPath})
	srv := httptest.NewServer(insp)
	t.Cleanup(func() { insp.Close(); srv.Close() })
	demo := demoDeliveries(t)
	for _, res := range demo {
		insp.OnResult(res)
	}
	do(t, ctx, "fix the time zone", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "UTC"})
		return chromedp.Void{}, err
	})
	shot := func(name string) {
		t.Helper()
		if dir == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", filepath.Join(dir, name))
	}
	detail := demo[len(demo)-1].ID
	for _, scheme := range []string{"light", "dark"} {
		do(t, ctx, "color scheme", colorScheme(scheme), chromedp.Navigate(srv.URL+"/"))
		until(t, ctx, "the demo rows", `document.getElementById('live').dataset.state === 'live' && document.querySelectorAll('#tbody tr').length === `+itoa(len(demo)))
		eval[bool](t, ctx, `(document.activeElement.blur(), true)`)
		shot("list-" + scheme + ".png")
		eval[bool](t, ctx, `(location.hash = `+jsString("#"+urlFragment("d:"+detail))+`, true)`)
		until(t, ctx, "the detail", `document.getElementById('d-summary').innerText.includes('*payloads.IssuesOpenedEvent') && document.querySelector('#p-tree details')`)
		eval[bool](t, ctx, `(document.activeElement.blur(), true)`)
		shot("detail-" + scheme + ".png")
	}
	// The failed delivery's detail shows its error.
	eval[bool](t, ctx, `(location.hash = `+jsString("#"+urlFragment("d:"+demo[3].ID))+`, true)`)
	until(t, ctx, "the failed detail", `document.querySelector('#d-attempts pre.err') && !document.getElementById('a-retry').disabled`)
	eval[bool](t, ctx, `(document.activeElement.blur(), true)`)
	shot("detail-failed-dark.png")
	if v := violations(t, ctx); len(v) != 0 {
		t.Errorf("CSP violations: %q", v)
	}
}

// Package browsertest starts the real headless Chromium that the inspector
// page's browser tests drive (Debian's chromium package; `make chromium`
// installs it). Without a browser a test skips, except under CI=true, where it
// fails: CI must run the browser tests. Only tests import this package.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// ViolationProbe runs before a page's own script, in every document: it
// collects the Content-Security-Policy violations the page sees in
// window.__violations.
const ViolationProbe = `window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample));`

// Path returns the browser to run: $CHROMIUM, or chromium on $PATH; "" when
// there is none.
func Path() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Unavailable ends t because the browser cannot run: a skip, or a failure
// under CI=true.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the browser tests must run; install it with `make chromium`)", msg)
	}
	t.Skipf("%s; install it with `make chromium` (apt-get install chromium)", msg)
}

// Start starts Chromium headless with a fresh profile, the flags that work on a
// machine without network, and ViolationProbe, and returns a tab's context;
// the browser is stopped when t ends.
func Start(t testing.TB) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		Unavailable(t, "no Chromium found (chromium on $PATH or $CHROMIUM)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelT := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelT(); cancelA() })
	if err := chromedp.Do(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: ViolationProbe})
		return chromedp.Void{}, err
	}); err != nil {
		Unavailable(t, "cannot start Chromium at %s: %v", path, err)
	}
	return ctx
}

// Eval runs a JavaScript expression in the page (as DevTools does, outside the
// page's Content-Security-Policy) and returns its value decoded as T; it fails
// t when the expression cannot be evaluated within 30 seconds.
func Eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Until waits up to 30 seconds for the JavaScript condition expr to hold in
// the page, and fails t naming what it waited for and, from state, what the
// page shows. (chromedp.Poll compiles its predicate with new Function, which a
// strict Content-Security-Policy forbids.)
func Until(t testing.TB, ctx context.Context, what, expr string, state func(context.Context) string) {
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
			t.Fatalf("waiting for %s (%s): err %v\npage: %s", what, expr, err, state(ctx))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

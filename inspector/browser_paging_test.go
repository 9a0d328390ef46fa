package inspector_test

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/webhooks"
	"github.com/chromedp/chromedp"
)

// TestBrowserPaging: the page shows the newest 50, and "Older deliveries"
// pages in the rest, each once, until there is no more.
func TestBrowserPaging(t *testing.T) {
	t.Parallel()
	insp := inspector.New(inspector.Options{})
	srv := httptest.NewServer(insp)
	t.Cleanup(func() { insp.Close(); srv.Close() })
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	for i := range 120 {
		res := webhooks.Result{ID: fmt.Sprint("p-", i), Name: "push", Status: 200, Verified: true,
			Payload: []byte(`{"ref":"refs/heads/main"}`), ReceivedAt: t0.Add(time.Duration(i) * time.Second)}
		if i%10 == 0 {
			res.Verified, res.Payload, res.Status = false, nil, 400
		}
		insp.OnResult(res)
	}
	ctx := browser(t)
	do(t, ctx, "open the page", chromedp.Navigate(srv.URL+"/"))
	until(t, ctx, "the first page", `document.querySelectorAll('#tbody tr').length === 50 && !document.getElementById('more').hidden`)
	for _, want := range []int{100, 120} {
		do(t, ctx, "older", chromedp.Click(chromedp.ID("more")))
		until(t, ctx, fmt.Sprint(want, " rows"), `document.querySelectorAll('#tbody tr').length === `+itoa(want))
	}
	until(t, ctx, "no more", `document.getElementById('more').hidden`)
	ids := eval[[]string](t, ctx, `[...document.querySelectorAll('#tbody tr td.id')].map((td) => td.textContent)`)
	for i, id := range ids {
		if want := fmt.Sprint("p-", 119-i); id != want {
			t.Fatalf("row %d is %s, want %s", i, id, want)
		}
	}
}

// TestBrowserDropped: a page whose stream is dropped (as a page that fell
// behind is) says so, reconnects, and reloads the list, so that deliveries
// that came while it was away show.
func TestBrowserDropped(t *testing.T) {
	t.Parallel()
	insp := inspector.New(inspector.Options{})
	srv := httptest.NewServer(insp)
	t.Cleanup(func() { insp.Close(); srv.Close() })
	add := func(id string) {
		insp.OnResult(webhooks.Result{ID: id, Name: "push", Status: 200, Verified: true, Payload: []byte(`{}`), ReceivedAt: time.Now()})
	}
	add("before")
	ctx := browser(t)
	do(t, ctx, "open the page", chromedp.Navigate(srv.URL+"/"))
	until(t, ctx, "live", `document.getElementById('live').dataset.state === 'live' && document.querySelectorAll('#tbody tr').length === 1`)
	eval[bool](t, ctx, `window.__notReloaded = true`)
	insp.DropPages()
	for stats(t, srv.URL+"/")["clients"] != 0 {
		time.Sleep(5 * time.Millisecond)
	}
	add("while-away") // no page listens: only a reload can show it
	until(t, ctx, "the row after reconnecting", `document.querySelector('#tbody tr[data-key="d:while-away"]') && document.getElementById('live').dataset.state === 'live'`)
	add("after")
	until(t, ctx, "live rows again", `document.querySelectorAll('#tbody tr').length === 3`)
	if !eval[bool](t, ctx, `window.__notReloaded === true`) {
		t.Error("the whole page reloaded")
	}
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forgehooks.dev/forgehooks/emitter"
	"forgehooks.dev/forgehooks/webhooks"
)

// uiURL waits for serve's log line naming the inspector page's URL.
func uiURL(t *testing.T, p *proc) string {
	t.Helper()
	re := regexp.MustCompile(`msg="forgehooks: inspector page" url=(\S+)`)
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("serve logged no inspector URL:\n%s", p.stderr)
	return ""
}

type pageRow struct {
	Key, ID, Status string
	Attempts        int
	HTTPStatus      int
}

type pageDetail struct {
	pageRow
	TypeName    string
	AttemptList []struct {
		Number int
		Error  string
	}
	CanRetry, CanRedeliver bool
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == 200 {
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}
	return res.StatusCode
}

// pageAction POSTs one of the page's actions, with its CSRF token, as the
// page's script does.
func pageAction(t *testing.T, page, csrf, action, id string) (int, string) {
	t.Helper()
	r, _ := http.NewRequest(http.MethodPost, page+"api/"+action+"?id="+id, nil)
	r.Header.Set("X-CSRF-Token", csrf)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// csrfToken reads the page's CSRF token from its HTML.
func csrfToken(t *testing.T, page string) string {
	t.Helper()
	res, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`<meta name="csrf-token" content="([0-9a-f]+)">`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no CSRF token in the page:\n%s", b)
	}
	return string(m[1])
}

// pageEvents follows the page's event stream and sends each row it reports.
func pageEvents(t *testing.T, page string) <-chan pageRow {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, page+"api/events", nil)
	res, err := http.DefaultClient.Do(r)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", res, err)
	}
	rows := make(chan pageRow, 256)
	go func() {
		defer res.Body.Close()
		defer close(rows)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var rw pageRow
			if json.Unmarshal([]byte(data), &rw) == nil && rw.Key != "" {
				rows <- rw
			}
		}
	}()
	return rows
}

// awaitRow waits for a row of the stream with key, status and attempts.
func awaitRow(t *testing.T, rows <-chan pageRow, key, status string, attempts int) {
	t.Helper()
	deadline := time.After(testTimeout)
	var seen []string
	for {
		select {
		case rw, ok := <-rows:
			if !ok {
				t.Fatalf("the event stream ended before %s %s/%d; saw %v", key, status, attempts, seen)
			}
			seen = append(seen, fmt.Sprintf("%s %s/%d", rw.Key, rw.Status, rw.Attempts))
			if rw.Key == key && rw.Status == status && rw.Attempts == attempts {
				return
			}
		case <-deadline:
			t.Fatalf("no row %s %s/%d; saw %v", key, status, attempts, seen)
		}
	}
}

// TestServeInspectorInbox: with --inbox and --ui the page's Source is the
// inbox. Its rows change live through the inbox's OnChange (stored, retried,
// dead); the page's Retry of a dead letter (POST /api/retry, as its button
// sends) runs it again through the inbox, on a fresh schedule; a duplicate
// and a bad signature show as the middleware's results; serve logs
// "duplicate delivery" and the runs' lines, but no "delivery stored" (the
// store's line is at debug level where the run logs its own).
func TestServeInspectorInbox(t *testing.T) {
	t.Parallel()
	sv, failing, runs, release := startFailingInbox(t)
	page := uiURL(t, sv)
	rows := pageEvents(t, page)
	hook := "http://" + sv.addr + webhooks.DefaultPath
	body := []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"o/r"}}`)
	if code, ans := deliver(t, hook, "issues", "dl-1", body, nil); code != 202 {
		t.Fatalf("stored: %d %s", code, ans)
	}
	if code, ans := deliver(t, hook, "issues", "dl-1", body, nil); code != 200 {
		t.Fatalf("duplicate: %d %s", code, ans)
	}
	release()
	awaitRow(t, rows, "d:dl-1", "dead", 2)

	var d pageDetail
	if code := getJSON(t, page+"api/delivery?key=d:dl-1", &d); code != 200 {
		t.Fatalf("detail: %d", code)
	}
	if d.TypeName != "*payloads.IssuesOpenedEvent" || !d.CanRetry || d.CanRedeliver || len(d.AttemptList) != 2 ||
		d.AttemptList[1].Error != "downstream refused attempt 2" {
		t.Fatalf("detail of the dead letter: %+v", d)
	}

	csrf := csrfToken(t, page)
	if code, ans := pageAction(t, page, "wrong", "retry", "dl-1"); code != 403 {
		t.Errorf("retry without the CSRF token: %d %s", code, ans)
	}
	failing.Store(false)
	if code, ans := pageAction(t, page, csrf, "retry", "dl-1"); code != 200 || !strings.Contains(ans, `"result":"ok"`) {
		t.Fatalf("retry: %d %s", code, ans)
	}
	awaitRow(t, rows, "d:dl-1", "handled", 3)
	if code, ans := pageAction(t, page, csrf, "retry", "dl-1"); code != 409 || !strings.Contains(ans, "not a dead letter") {
		t.Errorf("retry of a handled delivery: %d %s", code, ans)
	}
	if code, ans := pageAction(t, page, csrf, "retry", "no-such-id"); code != 404 {
		t.Errorf("retry of an unknown id: %d %s", code, ans)
	}
	if code, ans := pageAction(t, page, csrf, "replay", "dl-1"); code != 200 {
		t.Errorf("replay: %d %s", code, ans)
	}
	awaitRow(t, rows, "d:dl-1", "handled", 4)
	if n := runs.Load(); n != 4 {
		t.Errorf("the handler ran %d times, want 4 (2 failed, retried, replayed)", n)
	}

	forged, _ := http.NewRequest(http.MethodPost, hook, strings.NewReader(string(body)))
	forged.Header = http.Header{"Content-Type": {"application/json"}, webhooks.HeaderEvent: {"issues"},
		webhooks.HeaderDelivery: {"forged"}, webhooks.HeaderSignature: {"sha256=" + strings.Repeat("0", 64)}}
	if res, err := http.DefaultClient.Do(forged); err != nil || res.StatusCode != 400 {
		t.Fatalf("forged: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	// The handled status is written without waiting (a round trip saved per
	// delivery): the list may show it a moment after the live row.
	got := map[string]string{}
	wants := []string{"dl-1 handled", "dl-1 duplicate", "forged rejected"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var list struct{ Rows []pageRow }
		if code := getJSON(t, page+"api/deliveries", &list); code != 200 {
			t.Fatalf("list: %d", code)
		}
		clear(got)
		for _, rw := range list.Rows {
			got[rw.ID+" "+rw.Status] = fmt.Sprint(rw.HTTPStatus)
		}
		missing := 0
		for _, want := range wants {
			if _, ok := got[want]; !ok {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if _, ok := got[want]; !ok {
			t.Errorf("the list lacks %q: %v", want, got)
		}
	}
	if code := sv.stop(); code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, sv.stderr)
	}
	log := sv.stderr.String()
	for _, want := range []string{`msg="delivery handled" id=dl-1 event=issues.opened repository=o/r sender="" status=handled attempt=3 `, `msg="duplicate delivery" id=dl-1`, `msg="inbox: handlers failed on every attempt; moved to the dead letters" delivery=dl-1 event=issues attempts=2 error="downstream refused attempt 2"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, `msg="delivery stored"`) {
		t.Errorf("a delivery's store logged at info level beside its run:\n%s", log)
	}
	if strings.Contains(log, "handlers still running") {
		t.Errorf("a stored delivery logged as running:\n%s", log)
	}
}

// startFailingInbox starts serve with an inbox (one retry, after 1ms) and the
// inspector page, and an "issues" handler that fails, naming its attempt,
// while failing is set (at first it is); runs counts the handler's runs. The
// handler's first run waits for release, so that a duplicate sent before it
// finds the delivery still queued (answered 200 "duplicate") on a loaded
// machine too, not already a dead letter (which would run again, "requeued").
func startFailingInbox(t *testing.T) (sv *proc, failing *atomic.Bool, runs *atomic.Int32, release func()) {
	t.Helper()
	failing, runs = new(atomic.Bool), new(atomic.Int32)
	failing.Store(true)
	gate := make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	setup := func(wh *webhooks.Webhooks) {
		wh.On("issues", func(ctx context.Context, e emitter.Event) error {
			if runs.Add(1) == 1 {
				<-gate
			}
			info, _ := webhooks.DeliveryFrom(ctx)
			if failing.Load() {
				return fmt.Errorf("downstream refused attempt %d", info.Attempt)
			}
			return nil
		})
	}
	sv = start(t, &cli{setup: setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret,
		"--inbox", t.TempDir(), "--retry-delays", "1ms", "--ui", "127.0.0.1:0")
	t.Cleanup(release) // before serve's own cleanup stops it (cleanups run last first)
	return sv, failing, runs, release
}

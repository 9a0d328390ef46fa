package inspector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// row is a record as the list shows it.
type row struct {
	Key        string    `json:"key"` // "d:<id>" for a delivery, "r:<seq>" for a request
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant,omitempty"`
	Name       string    `json:"name"`
	Event      string    `json:"event"` // the same as Name, for scripts that read "event"; removed in the next release
	Action     string    `json:"action"`
	Repository string    `json:"repository"`
	Sender     string    `json:"sender"`
	ReceivedAt time.Time `json:"receivedAt"`
	Verified   bool      `json:"verified"`
	Status     string    `json:"status"`
	StatusText string    `json:"statusText"`
	HTTPStatus int       `json:"httpStatus"`
	DurationMS float64   `json:"durationMs"`
	Attempts   int       `json:"attempts"`
	Seq        uint64    `json:"seq"`
}

var rowPaths = []jsonscan.Path{{"repository", "full_name"}, {"sender", "login"}}

func (in *Inspector) row(rec *delivery.Record, request bool) row {
	rw := row{
		ID: rec.ID, Tenant: rec.Tenant, Name: rec.Name, Event: rec.Name, Action: rec.Action, ReceivedAt: rec.ReceivedAt,
		Verified: rec.Verified, Status: string(rec.Status), HTTPStatus: rec.HTTPStatus,
		Attempts: len(rec.Attempts), Seq: rec.Seq, StatusText: statusText(rec),
	}
	if request {
		rw.Key = "r:" + strconv.FormatUint(rec.Seq, 10)
	} else {
		rw.Key = "d:" + recordKey(rec)
	}
	d := rec.Duration
	if n := len(rec.Attempts); n > 0 {
		d = rec.Attempts[n-1].Duration
	}
	rw.DurationMS = float64(d.Microseconds()) / 1000
	rw.Repository, rw.Sender = rec.Repository, rec.Sender
	return rw
}

// statusText is a record's status as the list says it: "retrying 2/7",
// "rejected 400", "running (attempt 2)", "dead (final)" (its handlers' error
// was final: no retry followed).
func statusText(rec *delivery.Record) string {
	switch rec.Status {
	case delivery.StatusRetrying:
		// A retried dead letter starts a fresh schedule while its attempt
		// numbers go on: past MaxAttempts, only the number means something.
		if n := len(rec.Attempts); rec.MaxAttempts > 0 && n <= rec.MaxAttempts {
			return fmt.Sprintf("retrying %d/%d", n, rec.MaxAttempts)
		}
		return fmt.Sprintf("retrying (attempt %d)", len(rec.Attempts))
	case delivery.StatusRejected:
		return fmt.Sprintf("rejected %d", rec.HTTPStatus)
	case delivery.StatusRunning:
		if len(rec.Attempts) > 1 {
			return fmt.Sprintf("running (attempt %d)", len(rec.Attempts))
		}
	case delivery.StatusDead:
		if rec.Final() {
			return "dead (final)"
		}
	}
	return string(rec.Status)
}

// filter is what the list's filters ask for.
type filter struct {
	name, action, text, tenant string
	status                     delivery.Status
}

func (f filter) match(rw *row) bool {
	if f.action != "" && !strings.EqualFold(rw.Action, f.action) {
		return false
	}
	if f.text == "" {
		return true
	}
	for _, s := range []string{rw.ID, rw.Tenant, rw.Name + "." + rw.Action, rw.Repository, rw.Sender, rw.StatusText} {
		if strings.Contains(strings.ToLower(s), f.text) {
			return true
		}
	}
	return false
}

// side is one of the two lists a page merges: the Store's deliveries and
// the ring of requests.
type side struct {
	list    func(ctx context.Context, o delivery.ListOptions) ([]delivery.Record, error)
	request bool
}

const cursorEnd = "end"

// maxScan bounds the records one page reads from a side while looking for
// ones that match the free text.
const maxScan = 5000

// page returns up to limit rows of s that match f, before cursor, and the
// cursor after them (cursorEnd when s has no more).
func (in *Inspector) page(ctx context.Context, s side, f filter, cursor string, limit int) ([]row, []string, error) {
	if cursor == cursorEnd {
		return nil, nil, nil
	}
	before, _ := strconv.ParseUint(cursor, 10, 64)
	var rows []row
	var after []string // the cursor after each row
	scanned := 0
	for len(rows) < limit && scanned < maxScan {
		batch := max(limit, 100)
		recs, err := s.list(ctx, delivery.ListOptions{Status: f.status, Name: f.name, Tenant: f.tenant, Before: before, Limit: batch})
		if err != nil {
			return nil, nil, err
		}
		for i := range recs {
			before = recs[i].Seq
			rw := in.row(&recs[i], s.request)
			if f.match(&rw) {
				rows = append(rows, rw)
				after = append(after, strconv.FormatUint(before, 10))
				if len(rows) == limit {
					break
				}
			}
		}
		scanned += len(recs)
		if len(recs) < batch && len(rows) < limit {
			after = append(after, cursorEnd) // the side's end
			return rows, after, nil
		}
	}
	after = append(after, strconv.FormatUint(before, 10))
	return rows, after, nil
}

func (in *Inspector) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := filter{status: delivery.Status(q.Get("status")), text: strings.ToLower(strings.TrimSpace(q.Get("q"))), tenant: strings.TrimSpace(q.Get("tenant"))}
	name := q.Get("name")
	if name == "" {
		name = q.Get("event") // the parameter's name until the next release
	}
	f.name, f.action, _ = strings.Cut(strings.TrimSpace(name), ".")
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	cursors := strings.SplitN(q.Get("before"), "-", 2)
	for len(cursors) < 2 {
		cursors = append(cursors, "")
	}
	sides := []side{
		{list: in.src.List},
		{list: func(_ context.Context, o delivery.ListOptions) ([]delivery.Record, error) {
			return in.requests.list(o), nil
		}, request: true},
	}
	switch f.status {
	case "":
	case delivery.StatusRejected, delivery.StatusDuplicate:
		cursors[0] = cursorEnd
	default:
		cursors[1] = cursorEnd
	}
	var got [2][]row
	var after [2][]string
	for i, s := range sides {
		var err error
		if got[i], after[i], err = in.page(r.Context(), s, f, cursors[i], limit); err != nil {
			httpError(w, http.StatusBadGateway, "cannot list deliveries: "+err.Error())
			return
		}
	}
	// Merge the two, newest first; each side's cursor moves past the rows
	// taken from it.
	var out []row
	var took [2]int
	for len(out) < limit {
		i := -1
		switch {
		case took[0] < len(got[0]) && took[1] < len(got[1]):
			i = 0
			if got[1][took[1]].ReceivedAt.After(got[0][took[0]].ReceivedAt) {
				i = 1
			}
		case took[0] < len(got[0]):
			i = 0
		case took[1] < len(got[1]):
			i = 1
		}
		if i < 0 {
			break
		}
		out = append(out, got[i][took[i]])
		took[i]++
	}
	next := make([]string, 2)
	for i := range next {
		switch {
		case cursors[i] == cursorEnd:
			next[i] = cursorEnd
		case took[i] == len(got[i]):
			next[i] = after[i][len(after[i])-1]
		case took[i] == 0:
			next[i] = cursors[i]
		default:
			next[i] = after[i][took[i]-1]
		}
	}
	cursor := next[0] + "-" + next[1]
	if next[0] == cursorEnd && next[1] == cursorEnd {
		cursor = ""
	}
	if out == nil {
		out = []row{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"rows": out, "next": cursor})
}

// find returns the record of key ("d:<id>" or "r:<seq>").
func (in *Inspector) find(ctx context.Context, key string) (delivery.Record, bool, error) {
	if s, ok := strings.CutPrefix(key, "r:"); ok {
		seq, _ := strconv.ParseUint(s, 10, 64)
		rec, ok := in.requests.getSeq(seq)
		if !ok {
			return delivery.Record{}, true, delivery.ErrNotFound
		}
		return rec, true, nil
	}
	id, _ := strings.CutPrefix(key, "d:")
	rec, err := in.src.Get(ctx, id)
	return rec, false, err
}

type attemptView struct {
	Number     int       `json:"number"`
	Start      time.Time `json:"start"`
	DurationMS float64   `json:"durationMs"`
	Error      string    `json:"error"`
	Stack      string    `json:"stack"`
	Final      bool      `json:"final"`
}

type detailView struct {
	row
	Headers   [][2]string   `json:"headers"`
	Payload   string        `json:"payload"`
	Size      int           `json:"size"`
	Truncated bool          `json:"truncated"`
	TypeName  string        `json:"typeName"`
	Reason    string        `json:"reason"`
	Attempts  []attemptView `json:"attemptList"`
	Send      string        `json:"send"`
	Curl      string        `json:"curl"`
	CanReplay bool          `json:"canReplay"`
	CanRetry  bool          `json:"canRetry"`
	CanRedo   bool          `json:"canRedeliver"`
}

// DetailPayloadMax is the most payload bytes the detail view carries; a
// larger payload is cut there (the view says so with "truncated") and the
// download (api/payload) serves it whole.
const DetailPayloadMax = 1 << 20

// loadPayload takes one of the places for a payload load (Options.
// MaxPayloadLoads), or answers 503 when none frees up in time.
func (in *Inspector) loadPayload(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if in.loads == nil {
		return func() {}, true // MaxPayloadLoads negative: no bound
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case in.loads <- struct{}{}:
		return func() { <-in.loads }, true
	case <-r.Context().Done():
	case <-t.C:
	}
	w.Header().Set("Retry-After", "2")
	httpError(w, http.StatusServiceUnavailable, "too many payloads being loaded; try again")
	return nil, false
}

func (in *Inspector) detail(w http.ResponseWriter, r *http.Request) {
	release, ok := in.loadPayload(w, r)
	if !ok {
		return
	}
	defer release()
	key := r.URL.Query().Get("key")
	rec, request, err := in.find(r.Context(), key)
	switch {
	case errors.Is(err, delivery.ErrNotFound):
		httpError(w, http.StatusNotFound, "no such delivery (any more): the ring keeps only the latest")
		return
	case err != nil:
		httpError(w, http.StatusBadGateway, err.Error())
		return
	}
	size := max(int(rec.Size), len(rec.Payload))
	shown := rec.Payload
	if len(shown) > DetailPayloadMax {
		shown = shown[:DetailPayloadMax]
	}
	d := detailView{row: in.row(&rec, request), Headers: RedactedHeaders(rec.Header), Payload: string(shown), Size: size,
		Truncated: len(shown) < size, Reason: rec.Reason}
	for _, a := range rec.Attempts {
		d.Attempts = append(d.Attempts, attemptView{a.Number, a.Start, float64(a.Duration.Microseconds()) / 1000, a.Err, a.Stack, a.Final})
	}
	if !request && rec.Verified {
		if len(rec.Payload) <= DetailPayloadMax {
			d.TypeName = in.opts.TypeName(rec.Name, rec.Action, rec.Payload)
		} else {
			// Decoding a large payload to name its type would cost many times
			// its size: the naming rule alone is enough.
			d.TypeName = deriveTypeName(rec.Name, rec.Action)
		}
		d.Send, d.Curl = commands(*in.hookURL.Load(), rec.Name, rec.ID)
		d.CanReplay = true
		d.CanRetry = rec.Status == delivery.StatusDead || rec.Status == delivery.StatusFailed
		d.CanRedo = in.opts.Redeliver != nil
	}
	rec = delivery.Record{} // the payload is not kept while the answer is written
	writeJSON(w, http.StatusOK, d)
}

// payload serves a delivery's body as a download, byte for byte, for the
// commands that send it again.
func (in *Inspector) payload(w http.ResponseWriter, r *http.Request) {
	release, ok := in.loadPayload(w, r)
	if !ok {
		return
	}
	defer release()
	rec, _, err := in.find(r.Context(), r.URL.Query().Get("key"))
	if err != nil || rec.Payload == nil {
		httpError(w, http.StatusNotFound, "no payload kept for this delivery")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="payload.json"`)
	w.Write(rec.Payload)
}

// secretHeaders are headers whose values are never shown: credentials, and
// signatures, which would let a reader test guesses of the secret offline.
var secretHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Hub-Signature", webhooks.HeaderSignature}

// secretWords in a header's name mark its value as secret too.
var secretWords = []string{"secret", "token", "password", "signature", "key", "auth", "session", "cookie"}

// RedactedHeaders returns h sorted by name, one pair per value, with the value
// of every credential or signature header replaced by "[redacted]".
func RedactedHeaders(h http.Header) [][2]string {
	out := [][2]string{}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			if isSecretHeader(k) {
				v = "[redacted]"
			}
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

func isSecretHeader(name string) bool {
	for _, s := range secretHeaders {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	l := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// commands returns a `forgehooks send` command and a curl command that send a
// delivery again to url, reading its body from payload.json (the page's
// download) and the secret from $FORGE_WEBHOOK_SECRET. Every value is quoted
// for a POSIX shell.
func commands(url, event, id string) (send, curl string) {
	send = "forgehooks send --url " + shellQuote(url) + " --event " + shellQuote(event) +
		" --delivery " + shellQuote(id) + " payload.json"
	curl = "curl -sS " + shellQuote(url) +
		" -H 'Content-Type: application/json'" +
		" -H " + shellQuote(webhooks.HeaderEvent+": "+event) +
		" -H " + shellQuote(webhooks.HeaderDelivery+": "+id) +
		` -H "` + webhooks.HeaderSignature + `: $(forgehooks sign payload.json)"` +
		" --data-binary @payload.json"
	return send, curl
}

// shellQuote quotes s as one word for bash, zsh or ksh, in single quotes, a
// single quote inside written as quote, backslash, quote, quote:
//
//	it's → 'it'\''s'
//
// Control and format characters (which a terminal could act on, or which
// reorder the text shown) are written as \xNN bytes inside $'...' quoting
// instead.
func shellQuote(s string) string {
	special := func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }
	if utf8.ValidString(s) && !strings.ContainsFunc(s, special) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\'' || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(s[i])
		case special(r) || r == utf8.RuneError && n == 1:
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/internal/clip"
	"forgehooks.dev/forgehooks/internal/jsonscan"
	"forgehooks.dev/forgehooks/webhooks"
)

// The inbox command is registered here rather than in main.go's table, so
// that it comes with its file.
func init() {
	commands = append(commands, command{"inbox", "list, show and retry the deliveries of a durable inbox", cmdInbox})
}

// inboxFlags are the flags that name an inbox: serve's and the inbox
// command's.
type inboxFlags struct {
	dir, urls, retryDelays, forward string
	fsync                           bool
	ackWait                         time.Duration
	duplicateWindow, handled        days
	maxStore                        byteSize
	replayGuard                     bool
}

// addInboxFlags registers --inbox and --nats; with worker set, also the
// flags of serve's workers.
func addInboxFlags(fs *flagSet, worker bool) *inboxFlags {
	f := &inboxFlags{}
	fs.StringVar(&f.dir, "inbox", "", "durable inbox: store each delivery in this directory (an embedded NATS JetStream) before answering 202, and run its handlers from there")
	fs.StringVar(&f.urls, "nats", "", "durable inbox in an existing NATS cluster: its URLs, comma-separated (streams with 3 replicas)")
	if worker {
		fs.StringVar(&f.retryDelays, "retry-delays", "", "with an inbox: waits between a failed attempt and the next, comma-separated (e.g. 5s,5m,30m); after the last, a dead letter; \"none\": no retry (default 5s,5m,30m,2h,5h,10h,10h)")
		fs.StringVar(&f.forward, "forward", "", "re-POST each delivery to this URL with its original headers and body; a non-2xx answer fails it (and the inbox retries it)")
		fs.DurationVar(&f.ackWait, "ack-wait", inbox.DefaultAckWait, "with an inbox: how long a delivery stays leased to a serve that stopped answering for it (killed) before it runs again, elsewhere or after a restart")
		fs.BoolVar(&f.fsync, "fsync", false, "with --inbox: sync every delivery to disk before answering (survives power loss; slower)")
		f.duplicateWindow = days(inbox.DefaultDuplicateWindow)
		fs.Var(&f.duplicateWindow, "duplicate-window", "with an inbox: how long a delivery id (and its body's digest) is remembered; set it to the forge's delivery-log retention: 3d on its public service, up to 7d self-hosted")
		f.handled = days(inbox.DefaultHandledRetention)
		fs.Var(&f.handled, "handled-retention", "with an inbox: how long a handled delivery's body is kept (the page, replay) before its space is freed; its id stays for the duplicate window")
		f.maxStore = byteSize(inbox.DefaultMaxStoreBytes)
		fs.Var(&f.maxStore, "max-store-bytes", "with an inbox: bound of the store, such as 200MiB or 10GiB (--inbox: all its files; --nats: the inbox stream); when full, deliveries get 503 until handled ones free space; 0: the default; negative: no bound")
		fs.BoolVar(&f.replayGuard, "replay-guard", true, "with an inbox: answer a body already stored under another delivery id as a duplicate (a possible replay: the signature covers the body only); --replay-guard=false stores it again")
	}
	return f
}

// enabled reports whether an inbox was asked for.
func (f *inboxFlags) enabled() bool { return f.dir != "" || f.urls != "" }

// options checks the flags and returns the inbox's options.
func (f *inboxFlags) options() (inbox.Options, error) {
	var o inbox.Options
	if f.dir != "" && f.urls != "" {
		return o, errors.New("--inbox and --nats exclude each other")
	}
	o.Dir, o.Fsync, o.AckWait = f.dir, f.fsync, f.ackWait
	o.DuplicateWindow, o.HandledRetention = time.Duration(f.duplicateWindow), time.Duration(f.handled)
	o.MaxStoreBytes, o.AllowRepeatedBodies = int64(f.maxStore), !f.replayGuard
	if o.DuplicateWindow > inbox.DefaultMaxAge {
		o.MaxAge = o.DuplicateWindow
	}
	if f.ackWait < 0 {
		return o, errors.New("--ack-wait must not be negative")
	}
	if f.urls != "" {
		o.URLs = strings.Split(f.urls, ",")
	}
	if f.fsync && f.dir == "" {
		return o, errors.New("--fsync needs --inbox (a cluster's servers choose their own sync)")
	}
	if f.retryDelays != "" && !f.enabled() {
		return o, errors.New("--retry-delays needs --inbox or --nats")
	}
	switch f.retryDelays {
	case "":
	case "none":
		o.RetryDelays = []time.Duration{}
	default:
		for _, s := range strings.Split(f.retryDelays, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if err != nil || d < 0 {
				return o, fmt.Errorf("--retry-delays: %q is not a duration such as 5s or 30m", s)
			}
			o.RetryDelays = append(o.RetryDelays, d)
		}
	}
	return o, nil
}

// openServeInbox opens serve's inbox with wh's handlers as its receiver, and
// logs one line per delivery whose attempt finished. It returns nil when no
// inbox was asked for.
// onChange, when set, is told every change first (the inspector page's rows).
func openServeInbox(ctx context.Context, f *inboxFlags, wh *webhooks.Webhooks, log *slog.Logger, onChange func(inbox.Record)) (*inbox.Inbox, error) {
	if f.forward != "" {
		wh.OnAny(inbox.Forward(f.forward, &http.Client{Timeout: 30 * time.Second}))
	}
	if !f.enabled() {
		return nil, nil
	}
	o, err := f.options()
	if err != nil {
		return nil, err
	}
	o.Receiver, o.Logger = wh, log
	o.OnChange = func(r inbox.Record) {
		if onChange != nil {
			onChange(r)
		}
		if len(r.Attempts) == 0 || (r.Status != inbox.StatusHandled && r.Status != inbox.StatusRetrying && r.Status != inbox.StatusDead) {
			return
		}
		a := r.Attempts[len(r.Attempts)-1]
		name := r.Event
		if r.Action != "" {
			name += "." + r.Action
		}
		var found [2]jsonscan.Result
		_ = jsonscan.Lookup(r.Payload, logPaths, found[:]) // stored payloads are JSON objects
		// Payload values are cut as header values are: a signed delivery
		// may carry a 24 MiB action.
		attrs := []any{"id", clip.String(r.ID), "event", clip.String(name), "repository", clip.String(found[0].String(r.Payload)), "sender", clip.String(found[1].String(r.Payload)),
			"status", r.Status, "attempt", a.Number, "duration", a.Duration.Round(time.Microsecond)}
		switch r.Status {
		case inbox.StatusHandled:
			log.Info("delivery handled", attrs...)
		case inbox.StatusRetrying:
			log.Warn("delivery failed; will retry: "+firstLine(a.Err), attrs...)
		default:
			log.Error("delivery failed; dead letter: "+firstLine(a.Err), attrs...)
		}
	}
	in, err := inbox.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	where := f.dir
	if where == "" {
		where = f.urls
	}
	delays := o.RetryDelays
	if delays == nil {
		delays = inbox.DefaultRetryDelays
	}
	log.Info("forgehooks serve: durable inbox", "store", where, "retry_delays", fmt.Sprint(delays))
	return in, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func cmdInbox(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "inbox", "forgehooks inbox (ls | show ID | retry ID | replay ID | dead) --inbox DIR | --nats URL", `
Query the durable inbox of 'forgehooks serve --inbox DIR' (while that serve is
stopped: one process at a time opens a directory) or of a NATS cluster.

  ls          the stored deliveries, newest first (--status, --event, --limit, --before)
  show ID     one delivery: headers, payload, each attempt with its error
  retry ID    run a dead letter again, on a fresh retry schedule
  replay ID   run a stored delivery's handlers once more
  dead        the dead letters`)
	f := addInboxFlags(fs, false)
	status := fs.String("status", "", "ls: only deliveries with this status (queued, running, handled, retrying, dead)")
	event := fs.String("event", "", "ls: only deliveries of this event")
	limit := fs.Int("limit", inbox.DefaultListLimit, "ls: the most deliveries listed")
	before := fs.Uint64("before", 0, "ls: only deliveries stored before this sequence number (the next page)")
	jsonOut := fs.Bool("json", false, "print JSON instead of text")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) == 0 {
		return fs.usageError("which one: ls, show ID, retry ID, replay ID or dead")
	}
	sub, rest := pos[0], pos[1:]
	wantArgs := map[string]int{"ls": 0, "dead": 0, "show": 1, "retry": 1, "replay": 1}
	n, ok := wantArgs[sub]
	if !ok {
		return fs.usageError("unknown subcommand %q: ls, show ID, retry ID, replay ID or dead", sub)
	}
	if len(rest) != n {
		return fs.usageError("%s takes %d argument(s), got %d", sub, n, len(rest))
	}
	if !f.enabled() {
		return fs.usageError("no inbox: pass --inbox DIR or --nats URL")
	}
	o, err := f.options()
	if err != nil {
		return fs.usageError("%v", err)
	}
	o.Logger = slog.New(slog.DiscardHandler)
	in, err := inbox.Open(ctx, o)
	if err != nil {
		return fs.fail("%v", err)
	}
	defer in.Close(context.Background())
	out := c.stdout
	switch sub {
	case "ls", "dead":
		var recs []inbox.Record
		if sub == "ls" {
			recs, err = in.List(ctx, inbox.ListOptions{Status: *status, Event: *event, Limit: *limit, Before: *before})
		} else {
			recs, err = in.Dead(ctx)
		}
		if err != nil {
			return fs.fail("%v", err)
		}
		if *jsonOut {
			return writeJSON(fs, out, recordsJSON(recs))
		}
		writeTable(out, recs)
	case "show":
		r, err := in.Get(ctx, rest[0])
		if err != nil {
			return fs.fail("%v", err)
		}
		if *jsonOut {
			return writeJSON(fs, out, recordJSON(r))
		}
		writeRecord(out, r)
	case "retry", "replay":
		if sub == "retry" {
			err = in.Retry(ctx, rest[0])
		} else {
			err = in.Replay(ctx, rest[0])
		}
		if err != nil {
			return fs.fail("%v", err)
		}
		fmt.Fprintf(out, "%s: stored again; its handlers run when a serve with this inbox runs\n", rest[0])
	}
	return exitOK
}

func writeTable(w io.Writer, recs []inbox.Record) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tID\tEVENT\tSTATUS\tATTEMPTS\tRECEIVED\tLAST ERROR")
	for _, r := range recs {
		name := r.Event
		if r.Action != "" {
			name += "." + r.Action
		}
		lastErr := ""
		if n := len(r.Attempts); n > 0 {
			lastErr = firstLine(r.Attempts[n-1].Err)
			if len(lastErr) > 60 {
				lastErr = lastErr[:57] + "..."
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Seq, r.ID, name, r.Status, len(r.Attempts), r.ReceivedAt.UTC().Format(time.RFC3339), lastErr)
	}
	tw.Flush()
	if len(recs) == 0 {
		fmt.Fprintln(w, "(none)")
	}
}

func writeRecord(w io.Writer, r inbox.Record) {
	name := r.Event
	if r.Action != "" {
		name += "." + r.Action
	}
	fmt.Fprintf(w, "id:       %s\nevent:    %s\nstatus:   %s\nseq:      %d\nreceived: %s\n", r.ID, name, r.Status, r.Seq, r.ReceivedAt.UTC().Format(time.RFC3339Nano))
	fmt.Fprintln(w, "headers:")
	for _, k := range sortedKeys(r.Header) {
		for _, v := range r.Header[k] {
			fmt.Fprintf(w, "  %s: %s\n", k, v)
		}
	}
	fmt.Fprintf(w, "attempts: %d\n", len(r.Attempts))
	for _, a := range r.Attempts {
		res := "ok"
		if a.Err != "" {
			res = "error: " + strings.ReplaceAll(a.Err, "\n", "\n    ")
		}
		fmt.Fprintf(w, "  #%d %s (%s) %s\n", a.Number, a.Start.UTC().Format(time.RFC3339Nano), a.Duration.Round(time.Microsecond), res)
	}
	fmt.Fprintf(w, "payload (%d bytes):\n%s\n", len(r.Payload), r.Payload)
}

func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// recordOut is a Record as JSON: the payload as the JSON it is (as a string
// when it is not valid JSON).
type recordOut struct {
	Seq        uint64          `json:"seq"`
	ID         string          `json:"id"`
	Event      string          `json:"event"`
	Action     string          `json:"action,omitempty"`
	Status     string          `json:"status"`
	ReceivedAt time.Time       `json:"received_at"`
	Header     http.Header     `json:"header"`
	Attempts   []attemptOut    `json:"attempts"`
	Payload    json.RawMessage `json:"payload"`
}

type attemptOut struct {
	Number   int       `json:"number"`
	Start    time.Time `json:"start"`
	Duration string    `json:"duration"`
	Err      string    `json:"error,omitempty"`
}

func recordJSON(r inbox.Record) recordOut {
	o := recordOut{Seq: r.Seq, ID: r.ID, Event: r.Event, Action: r.Action, Status: r.Status, ReceivedAt: r.ReceivedAt, Header: r.Header, Attempts: []attemptOut{}}
	for _, a := range r.Attempts {
		o.Attempts = append(o.Attempts, attemptOut{a.Number, a.Start, a.Duration.String(), a.Err})
	}
	if json.Valid(r.Payload) {
		o.Payload = r.Payload
	} else {
		o.Payload, _ = json.Marshal(string(r.Payload))
	}
	return o
}

func recordsJSON(recs []inbox.Record) []recordOut {
	out := []recordOut{}
	for _, r := range recs {
		out = append(out, recordJSON(r))
	}
	return out
}

func writeJSON(fs *flagSet, w io.Writer, v any) int {
	// Not indented: the payload is printed as the bytes received.
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fs.fail("%v", err)
	}
	return exitOK
}

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"forgehooks.dev/forgehooks/delivery"
	"forgehooks.dev/forgehooks/inbox"
	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/internal/clip"
)

// inboxFlags are the flags that name an inbox: serve's and the inbox
// command's.
type inboxFlags struct {
	dir, urls, retryDelays, forward string
	orderBy                         string
	fsync                           bool
	ackWait, attemptTimeout         time.Duration
	duplicateWindow, handled        days
	maxStore, tenantMaxStore        byteSize
	replayGuard                     bool
	workers, replicas               countFlag
	nats                            *natsFlags
	// existing: --inbox must name a directory that exists (every command
	// but serve, which creates it): a typo must not open an empty inbox.
	existing bool
}

// addInboxFlags registers --inbox and --nats; with worker set (serve), also
// the flags of serve's workers.
func addInboxFlags(fs *flagSet, worker bool) *inboxFlags {
	f := &inboxFlags{existing: !worker}
	if worker {
		fs.StringVar(&f.dir, "inbox", "", "durable inbox: store each delivery in this directory (an embedded NATS JetStream) before answering 202, and run its handlers from there")
		fs.StringVar(&f.urls, "nats", "", "durable inbox in an existing NATS cluster: its URLs, comma-separated (streams with 3 replicas)")
	} else {
		fs.StringVar(&f.dir, "inbox", "", "the directory of a serve's durable inbox (--inbox of 'forgehooks serve'); while that serve runs, it is reached through its admin socket in the directory")
		fs.StringVar(&f.urls, "nats", "", "the NATS cluster of a serve's durable inbox (--nats of 'forgehooks serve'): its URLs, comma-separated")
	}
	f.nats = addNATSFlags(fs)
	if worker {
		fs.StringVar(&f.retryDelays, "retry-delays", "", "with an inbox: waits between a failed attempt and the next, comma-separated (e.g. 5s,5m,30m); after the last, a dead letter; \"none\": no retry (default 5s,5m,30m,2h,5h,10h,10h)")
		fs.StringVar(&f.forward, "forward", "", "re-POST each delivery to this URL with its original headers and body; a non-2xx answer fails it (and the inbox retries it)")
		fs.DurationVar(&f.ackWait, "ack-wait", inbox.DefaultAckWait, "with an inbox: how long a delivery stays leased to a serve that stopped answering for it (killed) before it runs again elsewhere; renewed while its handlers run (a serve --inbox restarted on its directory takes the leases back at once)")
		fs.DurationVar(&f.attemptTimeout, "attempt-timeout", inbox.DefaultHandlerTimeout, "with an inbox: bound of each attempt (a --forward POST is also cut at 30s): past it the attempt fails and is retried, and an ordered delivery whose handlers hang on gives its place to the other keys while its own key waits for it; 0: no bound")
		fs.StringVar(&f.orderBy, "order-by", "", "with an inbox: run the deliveries of each repository, installation or subject (pull request, issue, check suite, workflow run or job) one at a time, in the order stored; a failing one holds the later ones of its key back until it succeeds or is a dead letter")
		fs.BoolVar(&f.fsync, "fsync", false, "with --inbox: sync every delivery to disk before answering (survives power loss; slower)")
		f.duplicateWindow = days(inbox.DefaultDuplicateWindow)
		fs.Var(&f.duplicateWindow, "duplicate-window", "with an inbox: how long a delivery id (and its body's digest) is remembered; set it to the forge's delivery-log retention: 3d on its public service, up to 7d self-hosted")
		f.handled = days(inbox.DefaultHandledRetention)
		fs.Var(&f.handled, "handled-retention", "with an inbox: how long a handled delivery's body is kept (the page, replay) before its space is freed; its id stays for the duplicate window")
		f.maxStore = byteSize(inbox.DefaultMaxStoreBytes)
		fs.Var(&f.maxStore, "max-store-bytes", "with an inbox: bound of the store, such as 200MiB or 10GiB (--inbox: all its files; --nats: the inbox stream); when full, deliveries get 503 until handled ones free space; 0: the default; negative: no bound")
		fs.Var(&f.tenantMaxStore, "tenant-max-store-bytes", "with an inbox and --tenants: bound of the bytes of one tenant's deliveries stored and not yet handled, such as 100MiB; past it that tenant's deliveries get 503 while the others' are stored; 0: half of --max-store-bytes; negative: none but --max-store-bytes")
		fs.Var(&f.workers, "workers", "with an inbox: run at most `N` deliveries at once in this process (default 4 × the CPUs); serve --workers 0 --nats URL runs none: it stores them for 'forgehooks work'")
		fs.Var(&f.replicas, "replicas", "with --nats: `N` replicas of each stream and bucket made (default: the servers of the cluster reached, at most 3; 1 for a NATS server in no cluster; streams made before keep theirs)")
		fs.BoolVar(&f.replayGuard, "replay-guard", true, "with an inbox: answer a body already stored under another delivery id as a duplicate (a possible replay: the signature covers the body only); --replay-guard=false stores it again")
	}
	return f
}

// minStoreBytes is the smallest --max-store-bytes taken.
const minStoreBytes = 1 << 20

// enabled reports whether an inbox was asked for.
func (f *inboxFlags) enabled() bool { return f.dir != "" || f.urls != "" }

// options checks the flags and returns the inbox's options.
func (f *inboxFlags) options() (inbox.Options, error) {
	var o inbox.Options
	if f.dir != "" && f.urls != "" {
		return o, errors.New("--inbox and --nats exclude each other")
	}
	if f.existing && f.dir != "" {
		fi, err := os.Stat(f.dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return o, fmt.Errorf("--inbox %s: no such directory ('forgehooks serve --inbox DIR' makes it)", f.dir)
		case err != nil:
			return o, fmt.Errorf("--inbox: %v", err)
		case !fi.IsDir():
			return o, fmt.Errorf("--inbox %s: not a directory", f.dir)
		}
	}
	o.Dir, o.Fsync, o.AckWait = f.dir, f.fsync, f.ackWait
	o.DuplicateWindow, o.HandledRetention = time.Duration(f.duplicateWindow), time.Duration(f.handled)
	o.MaxStoreBytes, o.AllowRepeatedBodies = int64(f.maxStore), !f.replayGuard
	o.TenantMaxStoreBytes = int64(f.tenantMaxStore)
	if o.DuplicateWindow > inbox.DefaultMaxAge {
		o.MaxAge = o.DuplicateWindow
	}
	if f.ackWait < 0 {
		return o, errors.New("--ack-wait must not be negative")
	}
	switch {
	case f.attemptTimeout < 0:
		return o, errors.New("--attempt-timeout must not be negative")
	case f.attemptTimeout == 0:
		o.HandlerTimeout = -1 // none
	default:
		o.HandlerTimeout = f.attemptTimeout
	}
	if o.MaxStoreBytes > 0 && o.MaxStoreBytes < minStoreBytes {
		// Said here: the store's own refusal names no flag.
		return o, fmt.Errorf("--max-store-bytes %d is too small: at least 1MiB", o.MaxStoreBytes)
	}
	if f.urls != "" {
		o.URLs = strings.Split(f.urls, ",")
	}
	if f.nats.set() && f.urls == "" {
		return o, errors.New("--nats-creds, --nats-nkey, --nats-tls-*, --inbox-key-file and --insecure-unsealed need --nats (an --inbox directory keeps its own key)")
	}
	var err error
	if f.urls != "" {
		if o.Auth, err = f.nats.auth(); err != nil {
			return o, err
		}
		if o.Key, err = f.nats.key(); err != nil {
			return o, err
		}
		o.InsecureUnsealed = o.Key == nil
	}
	if f.fsync && f.dir == "" {
		return o, errors.New("--fsync needs --inbox (a cluster's servers choose their own sync)")
	}
	if f.retryDelays != "" && !f.enabled() {
		return o, errors.New("--retry-delays needs --inbox or --nats")
	}
	if f.workers.set && !f.enabled() {
		return o, errors.New("--workers needs --inbox or --nats")
	}
	if f.workers.set && f.workers.n < 0 {
		return o, errors.New("--workers must not be negative")
	}
	if f.workers.set && f.workers.n == 0 && f.urls == "" {
		return o, errors.New("--workers 0 needs --nats: the workers of 'forgehooks work' cannot open an --inbox directory that serve holds")
	}
	o.Workers = f.workers.n
	if f.replicas.set && (f.urls == "" || f.replicas.n < 1) {
		return o, errors.New("--replicas needs --nats, and a number from 1")
	}
	o.Replicas = f.replicas.n
	if f.orderBy != "" && !f.enabled() {
		return o, errors.New("--order-by needs --inbox or --nats")
	}
	if o.OrderBy, err = inbox.ParseOrderBy(f.orderBy); err != nil {
		return o, fmt.Errorf("--order-by: %q: use repository, installation or subject", f.orderBy)
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

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func cmdInbox(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "inbox", "forgehooks inbox (ls | show ID | retry ID... | retry --dead | replay ID... | skip ID | dead) --inbox DIR | --nats URL", `
Query and operate the durable inbox of 'forgehooks serve --inbox DIR', or of a
NATS cluster. While that serve runs, the commands go through its admin socket
in DIR (retry, replay and skip then act in that serve); otherwise they open DIR
themselves. DIR must exist: these commands never make one.

  ls            the stored deliveries, newest first (--status, --event, --tenant, --limit,
                --before), read and printed a page at a time
  show ID       one delivery: headers (secrets redacted), payload, each attempt with its error
                (a tenant's delivery is TENANT/ID)
  retry ID...   run dead letters again, on a fresh retry schedule
  retry --dead  run every dead letter again (--event: only those of an event)
  replay ID...  run stored deliveries' handlers once more
  skip ID       set a waiting delivery (its retry due later, or ordered behind its key)
                aside as a dead letter, so that the later ones of its key run; retry ID
                runs it again
  dead          the dead letters`)
	f := addInboxFlags(fs, false)
	status := fs.String("status", "", "ls: only deliveries with this status (queued, running, handled, retrying, dead)")
	event := fs.String("event", "", "ls, retry --dead: only deliveries of this event (without its action)")
	tenant := fs.String("tenant", "", "ls: only deliveries of this tenant (serve --tenants)")
	limit := fs.Int("limit", delivery.DefaultListLimit, "ls: the most deliveries listed (negative: all)")
	before := fs.Uint64("before", 0, "ls: only deliveries stored before this sequence number (the next page)")
	allDead := fs.Bool("dead", false, "retry: every dead letter (or those of --event)")
	jsonOut := fs.Bool("json", false, "print JSON instead of text (show: the payload whole)")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) == 0 {
		return fs.usageError("which one: ls, show ID, retry ID..., retry --dead, replay ID..., skip ID or dead")
	}
	sub, rest := pos[0], pos[1:]
	switch sub {
	case "ls", "dead":
		if len(rest) != 0 {
			return fs.usageError("%s takes no argument, got %d", sub, len(rest))
		}
	case "show", "skip":
		if len(rest) != 1 {
			return fs.usageError("%s takes 1 argument (a delivery id), got %d", sub, len(rest))
		}
	case "retry":
		switch {
		case *allDead && len(rest) > 0:
			return fs.usageError("retry: give delivery ids or --dead, not both")
		case !*allDead && len(rest) == 0:
			return fs.usageError("retry: which: give delivery ids, or --dead for every dead letter")
		}
	case "replay":
		if len(rest) == 0 {
			return fs.usageError("replay: which: give delivery ids")
		}
	default:
		return fs.usageError("unknown subcommand %q: ls, show ID, retry ID..., retry --dead, replay ID..., skip ID or dead", sub)
	}
	if *allDead && sub != "retry" {
		return fs.usageError("--dead is for retry")
	}
	if *event != "" && sub != "ls" && !*allDead {
		return fs.usageError("--event is for ls and retry --dead")
	}
	if !f.enabled() {
		return fs.usageError("no inbox: pass --inbox DIR or --nats URL")
	}
	if *status != "" && !delivery.Status(*status).Valid() {
		return fs.usageError("--status %q: one of queued, running, handled, retrying, dead", *status)
	}
	o, err := f.options()
	if err != nil {
		return fs.usageError("%v", err)
	}
	o.Logger = slog.New(slog.DiscardHandler)
	// The receivers' settings stand: this command's flag defaults are not
	// theirs.
	o.KeepSettings = true
	st, running, err := openInbox(ctx, o)
	if code, ok := replicasFailure(fs, err); ok {
		return code
	}
	if err != nil {
		return fs.fail("%v", err)
	}
	defer st.Close()
	out := c.stdout
	switch sub {
	case "ls":
		return listInbox(ctx, fs, out, st, delivery.ListOptions{Status: delivery.Status(*status), Name: *event, Tenant: *tenant, Before: *before}, *limit, *jsonOut)
	case "dead":
		recs, err := st.Dead(ctx)
		if err != nil {
			return fs.fail("%v", err)
		}
		if *jsonOut {
			return writeJSON(fs, out, recordsJSON(recs))
		}
		writeTable(out, recs, true, hasTenant(recs))
		if len(recs) == 0 {
			fmt.Fprintln(out, "(none)")
		}
	case "show":
		r, err := st.Get(ctx, rest[0])
		if err != nil {
			return fs.fail("%v", err)
		}
		if *jsonOut {
			return writeJSON(fs, out, recordJSON(r))
		}
		writeRecord(out, r)
	case "skip":
		if err := st.Skip(ctx, rest[0]); err != nil {
			return fs.fail("%v", err)
		}
		fmt.Fprintf(out, "%s: set aside as a dead letter; the later deliveries of its key go on ('forgehooks inbox retry %s' runs it again)\n", rest[0], rest[0])
	case "retry", "replay":
		ids := rest
		if *allDead {
			recs, err := st.Dead(ctx)
			if err != nil {
				return fs.fail("%v", err)
			}
			for _, r := range recs {
				if *event == "" || r.Name == *event {
					ids = append(ids, recordKey(r))
				}
			}
			if len(ids) == 0 {
				fmt.Fprintln(out, "no dead letter to retry")
				return exitOK
			}
		}
		op := st.Retry
		if sub == "replay" {
			op = st.Replay
		}
		where := "its handlers run when a serve with this inbox runs"
		if running {
			where = "the running serve runs its handlers"
		}
		failed := 0
		for _, id := range ids {
			if err := op(ctx, id); err != nil {
				failed++
				fmt.Fprintf(c.stderr, "forgehooks inbox: %s %s: %v\n", sub, clip.String(id), strings.TrimPrefix(err.Error(), "inbox: "))
				continue
			}
			fmt.Fprintf(out, "%s: stored again; %s\n", id, where)
		}
		if failed > 0 {
			if len(ids) > 1 {
				fmt.Fprintf(c.stderr, "forgehooks inbox: %s: %d of %d failed\n", sub, failed, len(ids))
			}
			return exitFailure
		}
	}
	return exitOK
}

// recordKey is what the inbox knows r by, as Get, Retry and Replay take
// it: its id, or "tenant/id" for a tenant's delivery (two tenants' hooks may
// send one id).
func recordKey(r delivery.Record) string {
	if r.Tenant == "" {
		return r.ID
	}
	return r.Tenant + "/" + r.ID
}

// listPage is how many deliveries 'inbox ls' asks for at a time: what it
// holds in memory, whatever --limit is.
const listPage = 1000

// listInbox prints up to limit records of st (all when limit is negative),
// a page at a time: each page is asked for before the last one's Seq and
// printed before the next is read, so that a listing of any length holds
// one page in memory (here and in a serve answering on its admin socket).
func listInbox(ctx context.Context, fs *flagSet, w io.Writer, st inboxStore, o delivery.ListOptions, limit int, jsonOut bool) int {
	if limit == 0 {
		limit = delivery.DefaultListLimit
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false) // the bytes received
	if jsonOut {
		bw.WriteString("[")
	}
	n, tenants := 0, false
	for limit < 0 || n < limit {
		o.Limit = listPage
		if limit > 0 {
			o.Limit = min(listPage, limit-n)
		}
		recs, err := st.List(ctx, o)
		if err != nil {
			if jsonOut {
				// What was printed stays a JSON document; the exit
				// status and the error say that it is cut short.
				bw.WriteString("]\n")
			}
			bw.Flush()
			return fs.fail("%v (after %d listed)", err, n)
		}
		if jsonOut {
			for i := range recs {
				if n+i > 0 {
					bw.WriteString(",")
				}
				if err := enc.Encode(recordJSON(recs[i])); err != nil {
					bw.WriteString("]\n")
					bw.Flush()
					return fs.fail("%v", err)
				}
			}
		} else {
			if n == 0 {
				tenants = hasTenant(recs)
			}
			writeTable(bw, recs, n == 0, tenants)
		}
		n += len(recs)
		if err := bw.Flush(); err != nil {
			return fs.fail("%v", err)
		}
		if len(recs) < o.Limit {
			break
		}
		o.Before = recs[len(recs)-1].Seq
	}
	if jsonOut {
		bw.WriteString("]\n")
	} else if n == 0 {
		bw.WriteString("(none)\n")
	}
	if err := bw.Flush(); err != nil {
		return fs.fail("%v", err)
	}
	return exitOK
}

// inboxStore is what the inbox command needs of an inbox: an opened one, or
// the admin socket of the serve that holds it.
type inboxStore interface {
	delivery.Store
	Dead(ctx context.Context) ([]delivery.Record, error)
	Skip(ctx context.Context, id string) error
	Close()
}

type openedInbox struct{ *inbox.Inbox }

func (o openedInbox) Close() { o.Inbox.Close(context.Background()) }

// openInbox opens the inbox of o, or, when a running serve holds its
// directory, reaches it through that serve's admin socket (running).
func openInbox(ctx context.Context, o inbox.Options) (st inboxStore, running bool, err error) {
	in, err := inbox.Open(ctx, o)
	if err == nil {
		return openedInbox{in}, false, nil
	}
	if !errors.Is(err, inbox.ErrInUse) {
		return nil, false, err
	}
	ac, aerr := inbox.DialAdmin(ctx, o.Dir)
	if aerr != nil {
		return nil, false, fmt.Errorf("%w; and %w", err, aerr)
	}
	return ac, true, nil
}

// hasTenant reports whether some of recs is a tenant's delivery.
func hasTenant(recs []delivery.Record) bool {
	for _, r := range recs {
		if r.Tenant != "" {
			return true
		}
	}
	return false
}

// lastErrorWidth is the width of the LAST ERROR column.
const lastErrorWidth = 60

// writeTable prints recs as a table, with its header line when header is
// set (the first page of a listing), and a TENANT column first when tenants
// is (the first page had a tenant's delivery: serve --tenants).
func writeTable(w io.Writer, recs []delivery.Record, header, tenants bool) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	if header {
		if tenants {
			fmt.Fprint(tw, "TENANT\t")
		}
		fmt.Fprintln(tw, "SEQ\tID\tEVENT\tSTATUS\tATTEMPTS\tRECEIVED\tLAST ERROR")
	}
	for _, r := range recs {
		if tenants {
			fmt.Fprintf(tw, "%s\t", cmp.Or(r.Tenant, "-"))
		}
		lastErr := firstLine(r.LastError())
		if len(lastErr) > lastErrorWidth {
			cut := lastErrorWidth - 3
			for cut > 0 && !utf8.RuneStart(lastErr[cut]) {
				cut--
			}
			lastErr = lastErr[:cut] + "..."
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Seq, r.ID, r.PayloadName(), statusOf(r), len(r.Attempts), r.ReceivedAt.UTC().Format(time.RFC3339), lastErr)
	}
	tw.Flush()
}

// statusOf is a record's status as the tables say it: a dead letter whose
// handlers' error was final (webhooks.Permanent) is "dead (final)", as on the
// inspector page.
func statusOf(r delivery.Record) string {
	if r.Status == delivery.StatusDead && r.Final() {
		return "dead (final)"
	}
	return string(r.Status)
}

// maxShownPayload is the most payload bytes 'inbox show' prints as text;
// --json prints it whole.
const maxShownPayload = 64 << 10

func writeRecord(w io.Writer, r delivery.Record) {
	if r.Tenant != "" {
		fmt.Fprintf(w, "tenant:   %s\n", r.Tenant)
	}
	fmt.Fprintf(w, "id:       %s\nevent:    %s\nstatus:   %s\nseq:      %d\nreceived: %s\n", r.ID, r.PayloadName(), statusOf(r), r.Seq, r.ReceivedAt.UTC().Format(time.RFC3339Nano))
	fmt.Fprintln(w, "headers:")
	for _, kv := range inspector.RedactedHeaders(r.Header) {
		fmt.Fprintf(w, "  %s: %s\n", kv[0], kv[1])
	}
	fmt.Fprintf(w, "attempts: %d\n", len(r.Attempts))
	for _, a := range r.Attempts {
		res := "ok"
		if a.Err != "" {
			res = "error: "
			if a.Final {
				res = "final error (not retried): "
			}
			res += strings.ReplaceAll(a.Err, "\n", "\n    ")
		}
		fmt.Fprintf(w, "  #%d %s (%s) %s\n", a.Number, a.Start.UTC().Format(time.RFC3339Nano), a.Duration.Round(time.Microsecond), res)
	}
	fmt.Fprintf(w, "payload (%d bytes):\n", len(r.Payload))
	var pretty bytes.Buffer
	if json.Indent(&pretty, r.Payload, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(r.Payload)
	}
	if pretty.Len() > maxShownPayload {
		cut := maxShownPayload
		for cut > 0 && !utf8.RuneStart(pretty.Bytes()[cut]) {
			cut--
		}
		fmt.Fprintf(w, "%s\n... (%d more bytes: --json prints the payload whole)\n", pretty.Bytes()[:cut], pretty.Len()-cut)
		return
	}
	fmt.Fprintf(w, "%s\n", pretty.Bytes())
}

// recordOut is a Record as JSON: secret headers redacted as the inspector
// page does, the payload (show only: ls and dead list no payloads) as the
// JSON it is, or as a string when it is not valid JSON.
type recordOut struct {
	Seq        uint64          `json:"seq"`
	ID         string          `json:"id"`
	Tenant     string          `json:"tenant,omitempty"`
	Name       string          `json:"name"`
	Event      string          `json:"event"` // the same as Name, for scripts that read "event"; removed in the next release
	Action     string          `json:"action,omitempty"`
	Status     string          `json:"status"`
	ReceivedAt time.Time       `json:"received_at"`
	Header     http.Header     `json:"header"`
	Attempts   []attemptOut    `json:"attempts"`
	Size       int64           `json:"size"`
	Payload    json.RawMessage `json:"payload,omitempty"`
}

type attemptOut struct {
	Number   int       `json:"number"`
	Start    time.Time `json:"start"`
	Duration string    `json:"duration"`
	Err      string    `json:"error,omitempty"`
	Final    bool      `json:"final,omitempty"`
}

func recordJSON(r delivery.Record) recordOut {
	o := recordOut{Seq: r.Seq, ID: r.ID, Tenant: r.Tenant, Name: r.Name, Event: r.Name, Action: r.Action, Status: string(r.Status), ReceivedAt: r.ReceivedAt,
		Header: http.Header{}, Attempts: []attemptOut{}, Size: max(r.Size, int64(len(r.Payload)))}
	for _, kv := range inspector.RedactedHeaders(r.Header) {
		o.Header[kv[0]] = append(o.Header[kv[0]], kv[1])
	}
	for _, a := range r.Attempts {
		o.Attempts = append(o.Attempts, attemptOut{a.Number, a.Start, a.Duration.String(), a.Err, a.Final})
	}
	switch {
	case r.Payload == nil:
	case json.Valid(r.Payload):
		o.Payload = r.Payload
	default:
		o.Payload, _ = json.Marshal(string(r.Payload))
	}
	return o
}

func recordsJSON(recs []delivery.Record) []recordOut {
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

// replicasFailure ends a command whose inbox the NATS servers refused for
// its replicas with an error that names --replicas and what to give it;
// ok is false for any other err.
func replicasFailure(fs *flagSet, err error) (code int, ok bool) {
	var re *inbox.ReplicasError
	if !errors.As(err, &re) {
		return 0, false
	}
	what := fmt.Sprintf("--replicas %d", re.Replicas)
	if re.Chosen {
		what = fmt.Sprintf("--replicas (not given: %d chosen for the cluster)", re.Replicas)
	}
	fix := "it is a NATS server in no cluster: give --replicas 1, or leave --replicas out"
	if re.Clustered {
		fix = "the cluster cannot place that many: give --replicas N, at most its servers with JetStream (streams made before keep their own replicas)"
	}
	if re.Chosen {
		return fs.fail("%s: %s: %v", what, fix, re.Err), true
	}
	return fs.usageError("%s: %s: %v", what, fix, re.Err), true
}

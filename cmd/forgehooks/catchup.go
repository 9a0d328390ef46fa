package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"forgehooks.dev/forgehooks/app"
	"forgehooks.dev/forgehooks/catchup"
	"forgehooks.dev/forgehooks/inbox"
)

func cmdCatchup(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "catchup", "forgehooks catchup (--app-id N --private-key FILE | --token-env VAR) (--app | --repo OWNER/REPO --hook-id N | --org ORG --hook-id N) [--inbox DIR | --nats URL | --state FILE] [flags]", `
Find the deliveries the forge sent while the receiver was down, unreachable or
failing, in the hook's delivery log (kept 3 days), and ask the forge to
redeliver each once: every delivery id (guid) with no successful attempt that
was not requested before. Prints a table of the guids read and the decision
for each. With --state, the checkpoint and the guids requested are kept, so
that the next run reads only what is new and requests nothing twice.

The app hook is read with an app JWT (--app-id and --private-key, the app's
PEM key); a repository or organization hook with a token read from the
environment variable --token-env names. Neither is ever printed.

With --inbox DIR or --nats URL (the inbox of 'forgehooks serve'), the guids
the inbox holds are not requested, and the checkpoint is kept in the inbox
instead of --state. An --inbox directory opens in one process at a time: run
it while that serve is stopped, or let serve catch up itself
(--catchup-every).`)
	f := addCatchupFlags(fs)
	inboxF := addInboxFlags(fs, false)
	dryRun := fs.Bool("dry-run", false, "decide and print the table, but request nothing and save nothing; each request is tried once, so that an unreachable forge fails at once")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	if inboxF.enabled() && *f.state != "" {
		return fs.usageError("--state and --inbox/--nats exclude each other: with an inbox, the checkpoint is kept in the inbox")
	}
	if _, err := inboxF.options(); err != nil {
		return fs.usageError("%v", err)
	}
	opts, code, ok := f.options(fs)
	if !ok {
		return code
	}
	opts.DryRun = *dryRun
	if opts.DryRun {
		opts.MaxTries = 1
	}
	opts.Logger = fs.logger(false)
	if inboxF.enabled() {
		o, _ := inboxF.options()
		o.Logger = slog.New(slog.DiscardHandler)
		o.KeepSettings = true         // the receivers' settings stand, not this command's defaults
		in, err := inbox.Open(ctx, o) // no Receiver: it only answers and stores
		if err != nil {
			return fs.fail("%v", err)
		}
		defer in.Close(context.Background())
		useInbox(&opts, in)
	}
	if opts.Checkpoints == nil && !opts.DryRun {
		opts.Logger.Warn("catchup: no --state file: the checkpoint and the guids requested are not kept, so the next run reads back --since again")
	}
	rep, err := catchup.Run(ctx, opts)
	if err != nil {
		// No table or summary: a partial one would read as a finished run.
		return fs.fail("%v", err)
	}
	printCatchupTable(c.stdout, rep)
	return exitOK
}

// useInbox makes a run skip what the inbox holds and keep its checkpoint in
// the inbox's state bucket (under catchup/ + the hook's key).
func useInbox(o *catchup.Options, in *inbox.Inbox) {
	o.Holder = in
	o.Checkpoints = catchup.StoreCheckpoints{Store: in}
}

// catchupFlags are the flags that say which hook to catch up and how; serve
// can take the same.
type catchupFlags struct {
	names  []string // of the flags below, for serve's check that they come with --catchup-every
	apiURL *string
	// apiURLShared: serve --allow-from meta reads --api-url too, so it is
	// not a catch-up flag alone.
	apiURLShared bool
	appID        *string
	privateKey   *string
	tokenEnv     *string
	app          *bool
	repo         *string
	org          *string
	hookID       *int64
	since        *time.Duration
	state        *string
	perMinute    *int
	maxPages     *int
}

func addCatchupFlags(fs *flagSet) *catchupFlags {
	before := map[string]bool{}
	fs.VisitAll(func(fl *flag.Flag) { before[fl.Name] = true })
	f := &catchupFlags{
		apiURL:     fs.String("api-url", catchup.DefaultAPIURL, "the forge's REST API base URL"),
		appID:      fs.String("app-id", "", "the app's id, for the app hook's JWT"),
		privateKey: fs.String("private-key", "", "PEM file of the app's private key (PKCS#1 or PKCS#8), for the app hook's JWT"),
		tokenEnv:   fs.String("token-env", "", "name of the environment variable holding the token, for a repository or organization hook"),
		app:        fs.Bool("app", false, "catch up the app's hook"),
		repo:       fs.String("repo", "", "catch up hook --hook-id of repository OWNER/REPO"),
		org:        fs.String("org", "", "catch up hook --hook-id of organization ORG"),
		hookID:     fs.Int64("hook-id", 0, "the repository's or organization's hook id"),
		since:      fs.Duration("since", 0, "look back this far (default: back to the checkpoint in --state, or 24h)"),
		state:      fs.String("state", "", "JSON file keeping the checkpoint and the guids requested, per hook (not with --inbox or --nats: the inbox keeps them)"),
		perMinute:  fs.Int("per-minute", catchup.DefaultRedeliveriesPerMinute, "redelivery requests a minute at most"),
		maxPages:   fs.Int("max-pages", catchup.DefaultMaxPages, "log pages of 100 read at most in one run"),
	}
	fs.VisitAll(func(fl *flag.Flag) {
		if !before[fl.Name] {
			f.names = append(f.names, fl.Name)
		}
	})
	return f
}

// options checks the flags and turns them into catchup.Options; on a usage
// error it returns the exit status and false.
func (f *catchupFlags) options(fs *flagSet) (catchup.Options, int, bool) {
	var o catchup.Options
	fail := func(format string, a ...any) (catchup.Options, int, bool) {
		return o, fs.usageError(format, a...), false
	}
	targets := 0
	for _, set := range []bool{*f.app, *f.repo != "", *f.org != ""} {
		if set {
			targets++
		}
	}
	if targets != 1 {
		return fail("say which hook: --app, or --repo OWNER/REPO --hook-id N, or --org ORG --hook-id N")
	}
	switch {
	case *f.app:
		if *f.hookID != 0 {
			return fail("--hook-id is for --repo and --org; the app has one hook")
		}
		if *f.tokenEnv != "" {
			return fail("the app hook is read with an app JWT: give --app-id and --private-key, not --token-env")
		}
		if *f.appID == "" || *f.privateKey == "" {
			return fail("--app needs --app-id N and --private-key FILE")
		}
		key, err := app.ReadPrivateKeyFile(*f.privateKey, nil)
		if err != nil {
			return o, fs.fail("%v", err), false
		}
		creds, err := catchup.NewAppJWT(*f.appID, key)
		if err != nil {
			return fail("%v", err)
		}
		o.Hook, o.Credentials = catchup.AppHook(), creds
	default:
		if *f.hookID <= 0 {
			return fail("--repo and --org need --hook-id N (the hook's id, in its settings URL)")
		}
		if *f.appID != "" || *f.privateKey != "" {
			return fail("a repository or organization hook is read with a token: give --token-env VAR, not --app-id/--private-key")
		}
		if *f.tokenEnv == "" {
			return fail("--repo and --org need --token-env VAR, the environment variable holding a token")
		}
		token := fs.c.getenv(*f.tokenEnv)
		if strings.TrimSpace(token) == "" {
			return fail("environment variable %s (--token-env) is empty or not set", *f.tokenEnv)
		}
		o.Credentials = catchup.Token(strings.TrimSpace(token))
		if *f.repo != "" {
			owner, repo, err := catchup.ParseRepo(*f.repo)
			if err != nil {
				return fail("--repo: %v", err)
			}
			o.Hook = catchup.RepoHook(owner, repo, *f.hookID)
		} else {
			o.Hook = catchup.OrgHook(*f.org, *f.hookID)
		}
	}
	if *f.since < 0 {
		return fail("--since %v: want a positive duration", *f.since)
	}
	if *f.perMinute <= 0 || *f.maxPages <= 0 {
		return fail("--per-minute and --max-pages must be positive")
	}
	o.APIURL, o.Since, o.RedeliveriesPerMinute, o.MaxPages = *f.apiURL, *f.since, *f.perMinute, *f.maxPages
	if *f.state != "" {
		o.Checkpoints = &catchup.StateFile{Path: *f.state}
	}
	return o, 0, true
}

// printCatchupTable prints one line per guid read, oldest first, and a summary.
func printCatchupTable(w io.Writer, rep catchup.Report) {
	if len(rep.Entries) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GUID\tEVENT\tACTION\tLAST STATUS\tDECISION")
		for _, e := range rep.Entries {
			decision := string(e.Decision)
			switch {
			case e.Refused != "":
				decision = "refused: " + e.Refused
			case e.Requested:
				decision = "redelivery requested"
			case e.Decision == catchup.Redeliver && rep.DryRun:
				decision = "would redeliver"
			case e.Decision == catchup.Redeliver:
				decision = "redeliver: not requested"
			}
			action := e.Latest.Action
			if action == "" {
				action = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d %s\t%s\n", e.GUID, e.Latest.Event, action, e.Latest.StatusCode, e.Latest.Status, decision)
		}
		tw.Flush()
	}
	verb := "requested"
	if rep.DryRun {
		verb = "would request"
	}
	n := rep.Requested
	if rep.DryRun {
		n = rep.Count(catchup.Redeliver)
	}
	fmt.Fprintf(w, "%s: %d deliveries in %d attempts read (%d pages) since %s; %s %d redeliveries; skipped %d succeeded, %d held, %d requested earlier\n",
		rep.Hook, len(rep.Entries), rep.Attempts, rep.Pages, rep.From.UTC().Format(time.RFC3339), verb, n,
		rep.Count(catchup.SkipSucceeded), rep.Count(catchup.SkipHeld), rep.Count(catchup.SkipRequested))
}

// serveCatchup checks serve's catch-up flags: nil without --catchup-every
// (and then none of them may be set).
func serveCatchup(fs *flagSet, f *catchupFlags, every time.Duration, withInbox bool) (*catchup.Options, int, bool) {
	if every < 0 {
		return nil, fs.usageError("--catchup-every %v: want a positive interval", every), false
	}
	if every == 0 {
		var set []string
		fs.Visit(func(fl *flag.Flag) {
			if slices.Contains(f.names, fl.Name) && !(fl.Name == "api-url" && f.apiURLShared) {
				set = append(set, "--"+fl.Name)
			}
		})
		if len(set) > 0 {
			return nil, fs.usageError("%s: catch-up flags, which need --catchup-every INTERVAL", strings.Join(set, ", ")), false
		}
		return nil, 0, true
	}
	if withInbox && *f.state != "" {
		return nil, fs.usageError("--state and --inbox/--nats exclude each other: with an inbox, the checkpoint is kept in the inbox"), false
	}
	opts, code, ok := f.options(fs)
	if !ok {
		return nil, code, false
	}
	return &opts, 0, true
}

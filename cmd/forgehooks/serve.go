package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"forgehooks.dev/forgehooks/inspector"
	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/payloads"
	"forgehooks.dev/forgehooks/receiver"
	"forgehooks.dev/forgehooks/sourceip"
	"forgehooks.dev/forgehooks/webhooks"
)

// cmdServe is flag handling over package receiver.
func cmdServe(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "serve", "forgehooks serve [flags]", `
Run a receiver: verify each delivery posted to --path and log one line for it
(id, event.action, repository, sender, outcome; a rejected delivery's line says
why). SIGINT or SIGTERM stops it, letting running handlers finish.

With --inbox DIR (or --nats URL) each delivery is stored durably before it is
answered 202, and its handlers run from there, retried on failure; 'forgehooks
inbox ... --inbox DIR' operates it while serve runs; with --nats URL
--workers 0 serve only stores them, and 'forgehooks work' runs them. With
--catchup-every,
serve also asks the forge, once at start and then at each interval, to
redeliver what it missed (see 'forgehooks catchup --help').

For a first try without a secret of your own, run 'make serve', which passes a
development secret.`)
	fs.group("Receiving")
	addr := fs.String("addr", "127.0.0.1:3000", "address to listen on")
	path := fs.String("path", webhooks.DefaultPath, "URL path that receives deliveries; a segment {tenant} names the tenant (--tenants), such as /t/{tenant}/hooks")
	secretF := fs.secretFlag()
	tenantsF := fs.String("tenants", "", "YAML `FILE` of tenants, each with its own secrets and optional hook ids, installation, token and api_url, ending with the line 'end: true', instead of --secret (read again on SIGHUP; a file that cannot be read whole and checked keeps the running tenants)")
	var additional stringList
	fs.Var(&additional, "additional-secret", "another accepted secret, while one is rotated (repeatable)")
	jsonLog := fs.Bool("json", false, "log JSON lines instead of text")
	handlerTimeout := fs.Duration("handler-timeout", webhooks.DefaultTimeout, "how long to wait for handlers before answering 202 (the forge waits 10s)")
	acceptF := fs.String("accept", "", "answer 200 \"ignored\" to verified deliveries of other events, neither stored nor run: a comma-separated `LIST` of event or event.action names, * a wildcard (issues,pull_request.opened,check_*)")
	exposeErrs := fs.Bool("expose-handler-errors", false, "answer a failed delivery's 500 with the handler's error message (default: a generic message; the log has the error)")
	fs.group("Timeouts")
	readHeader := fs.Duration("read-header-timeout", 10*time.Second, "time allowed to read a request's headers")
	read := fs.Duration("read-timeout", 30*time.Second, "time allowed to read a whole request")
	write := fs.Duration("write-timeout", 60*time.Second, "time allowed to answer a request, from the end of its headers")
	idle := fs.Duration("idle-timeout", 120*time.Second, "how long an idle keep-alive connection stays open")
	shutdown := fs.Duration("shutdown-timeout", receiver.DefaultDrainTimeout, "on SIGINT/SIGTERM, how long to let requests and handlers finish (negative: no bound)")
	fs.group("Bounds")
	maxConns := fs.Int("max-conns", 0, "open connections per listener; past it the one idle longest is closed (0: below the descriptor limit (ulimit -n), at most 4096, logged at start; negative: no bound)")
	maxBody := fs.Int64("max-body-bytes", webhooks.DefaultMaxBodyBytes, "largest body accepted (413 above)")
	maxInFlight := fs.Int("max-in-flight", webhooks.DefaultMaxInFlight, "deliveries whose handlers may run at once, answered ones included (503 above; negative: no bound)")
	maxRunning := fs.Int64("max-running-bytes", webhooks.DefaultMaxRunningBytes, "payload bytes of deliveries whose handlers run at once, answered ones included (503 above; negative: no bound)")
	maxUnverified := fs.Int64("max-unverified-bytes", webhooks.DefaultMaxUnverifiedBytes, "bytes of request bodies being read and not yet verified, all requests together (503 above; negative: no bound)")
	allowFrom := fs.String("allow-from", "", "answer 403, before reading the body, to requests from other source addresses: \"meta\" (the forge's hook ranges, from --api-url's /meta, refreshed hourly) or a comma-separated `LIST` of CIDRs")
	trustProxy := fs.String("trust-proxy", "", "with --allow-from: the peers (a comma-separated `LIST` of CIDRs) whose X-Forwarded-For names the client")
	metaRefresh := fs.Duration("meta-refresh", time.Hour, "with --allow-from meta: how often the ranges are read again (a failure keeps the last ones)")
	fs.group("Durable inbox and forwarding")
	inboxF := addInboxFlags(fs, true)
	fs.group("Inspector page and metrics")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics, such as 127.0.0.1:9090 (default: none)")
	uiAddr := fs.String("ui", "", "serve the delivery inspector page at this address, such as 127.0.0.1:3001 (default: off)")
	uiTokenEnv := fs.String("ui-token-env", "", "environment variable holding a token the inspector page requires (needed when --ui is not a loopback address)")
	fs.group("Catch-up")
	catchupEvery := fs.Duration("catchup-every", 0, "ask the forge to redeliver what was missed, once at start and then at this interval, such as 6h (default: never); needs --app (with --app-id, --private-key) or --repo/--org with --hook-id and --token-env, as forgehooks catchup does")
	catchupF := addCatchupFlags(fs)
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	secret := fs.secret(*secretF)
	if *tenantsF != "" {
		if *secretF != "" || len(additional) > 0 {
			return fs.usageError("--tenants and --secret/--additional-secret: choose one (each tenant's secrets are in the file)")
		}
		secret = ""
	} else if secret == "" {
		code := fs.noSecret()
		fmt.Fprintln(c.stderr, "To try it locally in a checkout, 'make serve' passes a development secret.")
		return code
	}
	inOpts, err := inboxF.options()
	if err != nil {
		return fs.usageError("%v", err)
	}
	catchupF.apiURLShared = *allowFrom == "meta"
	cu, code, ok := serveCatchup(fs, catchupF, *catchupEvery, inboxF.enabled())
	if !ok {
		return code
	}
	if *uiAddr == "" && *uiTokenEnv != "" {
		return fs.usageError("--ui-token-env needs --ui")
	}
	log := fs.logger(*jsonLog)
	wrap, code, ok := serveAllowFrom(ctx, fs, log, *allowFrom, *trustProxy, *catchupF.apiURL, *metaRefresh)
	if !ok {
		return code
	}
	var accept *webhooks.Accept
	if *acceptF != "" {
		if accept, err = webhooks.ParseAccept(strings.Split(*acceptF, ",")); err != nil {
			return fs.usageError("--accept: %v", err)
		}
	}
	var tenants *webhooks.Tenants
	if *tenantsF != "" {
		set, err := loadTenants(*tenantsF, c.getenv)
		if err != nil {
			return fs.usageError("--tenants: %v", err)
		}
		src := &reloadable{}
		src.p.Store(&set)
		// The source is the file's tenants in memory: a call costs what a
		// cache hit does, so made-up keys need no bound on their rate.
		tenants = webhooks.NewTenants(src, webhooks.TenantsOptions{LookupRate: -1})
		watchHangup(ctx, log, *tenantsF, c.getenv, src, tenants)
		log.Info("forgehooks: tenants", "file", *tenantsF, "tenants", len(set), "path", *path)
	}
	wh, err := webhooks.New(webhooks.Options{Secret: secret, AdditionalSecrets: additional, Logger: log, KnownEvent: payloads.IsKnownEventName, Tenants: tenants})
	if err != nil {
		return fs.usageError("%v", err)
	}
	if c.setup != nil {
		c.setup(wh)
	}
	o := receiver.Options{
		Webhooks: wh, Logger: log, Addr: *addr, MetricsAddr: *metricsAddr, InspectorAddr: *uiAddr,
		Forward: inboxF.forward, Catchup: cu, Wrap: wrap, CatchupEvery: *catchupEvery, DrainTimeout: *shutdown, MaxConns: *maxConns,
		Middleware: webhooks.MiddlewareOptions{
			Path: *path, Timeout: *handlerTimeout, MaxBodyBytes: *maxBody, MaxInFlight: *maxInFlight,
			MaxRunningBytes: *maxRunning, MaxUnverifiedBytes: *maxUnverified, ExposeHandlerErrors: *exposeErrs,
			Accept: accept,
		},
		Server: &http.Server{ReadHeaderTimeout: *readHeader, ReadTimeout: *read, WriteTimeout: *write, IdleTimeout: *idle},
		OnListen: func(part, addr string) {
			if part == "webhooks" && c.listening != nil {
				c.listening(addr)
			}
		},
	}
	if inboxF.enabled() {
		o.Inbox = &inOpts
		o.IngestOnly = inboxF.workers.set && inboxF.workers.n == 0
	}
	if *metricsAddr != "" {
		o.Metrics = &metrics.Options{}
	}
	if *uiAddr != "" {
		token := ""
		if *uiTokenEnv != "" {
			if token = c.getenv(*uiTokenEnv); token == "" {
				return fs.usageError("--ui-token-env %s: the variable is unset or empty", *uiTokenEnv)
			}
		}
		if token == "" && !inspector.IsLoopbackAddr(*uiAddr) {
			// Said here in flags: the receiver's own message names its options.
			return fs.usageError("--ui %s is not a loopback address: anyone who reaches it would read the deliveries; pass --ui-token-env VAR (a variable holding a token the page then requires), or use a 127.0.0.1 address", *uiAddr)
		}
		o.Inspector = &inspector.Options{Token: token, TypeName: func(event, _ string, payload []byte) string {
			if p, err := payloads.Parse(event, payload); err == nil {
				return fmt.Sprintf("%T", p)
			}
			return ""
		}}
	}
	if c.setMemoryLimit != nil {
		c.setMemoryLimit(receiver.MemoryLimit(o))
	}
	r, err := receiver.New(ctx, o)
	var oe *receiver.OptionError
	if errors.As(err, &oe) {
		return fs.usageError("%s: %v", optionFlags[oe.Field], oe.Err)
	}
	if code, ok := replicasFailure(fs, err); ok {
		return code
	}
	if err != nil {
		return fs.fail("%v", err)
	}
	if err := r.Run(ctx); err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fs.fail("%v (is another receiver running there? choose another address)", err)
		}
		return fs.fail("%v", err)
	}
	return exitOK
}

// optionFlags names the flag of each receiver option that a flag sets.
var optionFlags = map[string]string{
	"Addr": "--addr", "InspectorAddr": "--ui", "MetricsAddr": "--metrics", "Forward": "--forward",
	"CatchupEvery": "--catchup-every", "Webhooks": "--secret", "IngestOnly": "--workers",
}

// serveAllowFrom makes the source filter of --allow-from and --trust-proxy;
// nil without --allow-from. With "meta" it reads the ranges from apiURL
// once (serve does not start without them) and then every refresh.
func serveAllowFrom(ctx context.Context, fs *flagSet, log *slog.Logger, allow, trust, apiURL string, refresh time.Duration) (func(http.Handler) http.Handler, int, bool) {
	if allow == "" {
		if trust != "" {
			return nil, fs.usageError("--trust-proxy needs --allow-from"), false
		}
		return nil, 0, true
	}
	trusted, err := parsePrefixes(trust)
	if err != nil {
		return nil, fs.usageError("--trust-proxy: %v", err), false
	}
	f := sourceip.New(sourceip.Options{TrustedProxies: trusted, Logger: log})
	if allow != "meta" {
		rs, err := parsePrefixes(allow)
		if err != nil || len(rs) == 0 {
			return nil, fs.usageError("--allow-from: want \"meta\" or CIDRs: %v", err), false
		}
		f.Set(rs)
		return f.Wrap, 0, true
	}
	if refresh <= 0 {
		return nil, fs.usageError("--meta-refresh %v: want a positive interval", refresh), false
	}
	meta := &sourceip.Meta{APIURL: apiURL, Logger: log}
	err = f.Refresh(ctx, refresh, meta.Fetch)
	if err != nil {
		return nil, fs.fail("--allow-from meta: %v", err), false
	}
	return f.Wrap, 0, true
}

// parsePrefixes parses a comma-separated list of CIDRs or addresses.
func parsePrefixes(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		p, err := sourceip.ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

package main

import (
	"context"
	"errors"
	"strconv"

	"forgehooks.dev/forgehooks/metrics"
	"forgehooks.dev/forgehooks/receiver"
)

// countFlag is an int flag that knows whether it was given, and shows no
// default.
type countFlag struct {
	n   int
	set bool
}

func (c *countFlag) String() string {
	if c == nil || !c.set {
		return ""
	}
	return strconv.Itoa(c.n)
}

func (c *countFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not a whole number")
	}
	c.n, c.set = n, true
	return nil
}

// cmdWork runs the workers of an inbox that 'serve --workers 0' fills.
func cmdWork(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "work", "forgehooks work --nats URL --forward URL [flags]", `
Run the deliveries stored in a durable inbox by receivers that only take them
in ('forgehooks serve --nats URL --workers 0'): each is re-POSTed to --forward
with its original headers and body, retried on failure (--retry-delays), a
dead letter after the last try, in order per key with --order-by. Any number
of work processes may share the inbox; each delivery runs in one at a time.
SIGINT or SIGTERM stops fetching, lets running deliveries finish for up to
--shutdown-timeout, and leaves the rest to the other (or next) work process.
No secret is needed: the deliveries were verified when stored.`)
	fs.group("Inbox and forwarding")
	inboxF := addInboxFlags(fs, true)
	fs.group("Running")
	jsonLog := fs.Bool("json", false, "log JSON lines instead of text")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics (forgehooks_worker_…) at http://`ADDR`/metrics (default: none)")
	shutdown := fs.Duration("shutdown-timeout", receiver.DefaultDrainTimeout, "on SIGINT/SIGTERM, how long to let running deliveries finish (negative: no bound)")
	pos, code, done := fs.parse(args)
	if done {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	if !inboxF.enabled() {
		return fs.usageError("--nats URL (or --inbox DIR) is required: the inbox to run")
	}
	if inboxF.forward == "" {
		return fs.usageError("--forward URL is required: where each delivery is run")
	}
	if inboxF.workers.set && inboxF.workers.n == 0 {
		return fs.usageError("--workers 0 would run nothing")
	}
	o, err := inboxF.options()
	if err != nil {
		return fs.usageError("%v", err)
	}
	wo := receiver.WorkerOptions{Inbox: o, Forward: inboxF.forward, MetricsAddr: *metricsAddr, Logger: fs.logger(*jsonLog), DrainTimeout: *shutdown}
	if *metricsAddr != "" {
		wo.Metrics = &metrics.Options{}
	}
	if c.listening != nil {
		wo.OnListen = func(_, addr string) { c.listening(addr) }
	}
	err = receiver.RunWorker(ctx, wo)
	var oe *receiver.OptionError
	if errors.As(err, &oe) {
		return fs.usageError("%s: %v", map[string]string{"Forward": "--forward", "MetricsAddr": "--metrics"}[oe.Field], oe.Err)
	}
	if code, ok := replicasFailure(fs, err); ok {
		return code
	}
	if err != nil {
		return fs.fail("%v", err)
	}
	return exitOK
}

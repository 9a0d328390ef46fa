// Command forgehooks receives, simulates and relays webhook deliveries of a
// code-hosting forge, for local development, testing and small deployments.
//
//	forgehooks serve    run a receiver that verifies and logs deliveries; with
//	                    --inbox or --nats it stores them durably first, with
//	                    --ui it shows them on an inspector page, with
//	                    --catchup-every it has missed ones redelivered
//	forgehooks work     run the deliveries of an inbox that 'serve --workers 0'
//	                    fills (any number of each, sharing a NATS cluster)
//	forgehooks send     sign and POST a delivery, as the forge does
//	forgehooks relay    receive deliveries from a webhook channel (smee-style)
//	forgehooks proxy    serve webhook channels on this machine
//	forgehooks sign     print a payload's signature
//	forgehooks verify   check a payload's signature
//	forgehooks events   list every event and event.action name
//	forgehooks catchup  have the forge redeliver what the receiver missed
//	forgehooks inbox    list, show, retry and replay the deliveries of an inbox
//	forgehooks doctor   check that the app can receive the events it handles
//
// Exit status: 0 success; 1 failure (an invalid signature, a non-2xx answer, a
// server that cannot start); 2 usage error (a missing or bad flag or argument).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"forgehooks.dev/forgehooks/webhooks"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise the
// module version from the build information is used.
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// cli is what a command reads and writes, and the hooks tests use to watch it.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	// listening, when set, is told the address a server listens on.
	listening func(addr string)
	// setup, when set, is given the Webhooks of serve and relay before they
	// receive, so that tests can add handlers.
	setup func(*webhooks.Webhooks)
	// connected, when set, is called each time relay opens its stream.
	connected func()
	// setMemoryLimit, when set, is given the soft memory limit a command's
	// bounds imply (runtime/debug.SetMemoryLimit in main; tests leave it nil,
	// since it would apply to the whole test binary).
	setMemoryLimit func(bytes int64)
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) int
}

// commands lists every subcommand, in the order the usage shows them.
var commands = []command{
	{"serve", "run a receiver that verifies and logs deliveries", cmdServe},
	{"work", "run the deliveries a 'serve --workers 0' stored", cmdWork},
	{"send", "sign and POST a delivery, as the forge does", cmdSend},
	{"relay", "receive deliveries from a webhook channel", cmdRelay},
	{"proxy", "serve webhook channels on this machine", cmdProxy},
	{"sign", "print a payload's signature", cmdSign},
	{"verify", "check a payload's signature", cmdVerify},
	{"events", "list every event and event.action name", cmdEvents},
	{"catchup", "have the forge redeliver what the receiver missed", cmdCatchup},
	{"inbox", "list, show and retry the deliveries of a durable inbox", cmdInbox},
	{"doctor", "check that the app can receive the events it handles", cmdDoctor},
}

const exitCodes = `Exit status: 0 success; 1 failure (invalid signature, non-2xx answer, a
server that cannot start); 2 usage error (missing or bad flag or argument).
`

func usage(w io.Writer) {
	fmt.Fprintf(w, "forgehooks: receive, simulate and relay webhook deliveries.\n\nUsage: forgehooks <command> [flags]\n\nCommands:\n")
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, "\nRun 'forgehooks <command> --help' for a command's flags.\n"+
		"The secret comes from --secret or the FORGE_WEBHOOK_SECRET environment variable.\n\n%s", exitCodes)
}

// run runs the command line args (without the program name) and returns the
// exit status.
func run(ctx context.Context, c *cli, args []string) int {
	if len(args) == 0 {
		usage(c.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(c.stdout)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintf(c.stdout, "forgehooks %s\n", versionString())
		return exitOK
	}
	for _, cmd := range commands {
		if cmd.name == args[0] {
			return cmd.run(ctx, c, args[1:])
		}
	}
	fmt.Fprintf(c.stderr, "forgehooks: unknown command %q\n\n", args[0])
	usage(c.stderr)
	return exitUsage
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, setMemoryLimit: setMemoryLimit}, os.Args[1:])
	stop()
	os.Exit(code)
}

// setMemoryLimit sets the soft memory limit, unless GOMEMLIMIT already did.
func setMemoryLimit(bytes int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(bytes)
	}
}

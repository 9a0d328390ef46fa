package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"forgehooks.dev/forgehooks/receiver"
)

// secretEnv is the environment variable every command takes the secret from
// when --secret is not given.
const secretEnv = "FORGE_WEBHOOK_SECRET"

// flagSet is a subcommand's flags, with its usage text.
type flagSet struct {
	*flag.FlagSet
	c    *cli
	use  string // "forgehooks send [flags] [file]"
	desc string

	groups  []string          // titles of the flag groups, in order
	groupOf map[string]string // flag name → its group's title
}

func newFlagSet(c *cli, name, use, desc string) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), c: c, use: use, desc: desc}
	fs.SetOutput(io.Discard) // errors are printed by parse, usage by printUsage
	return fs
}

// group starts a group of flags: those registered after it, until the next
// group, are listed under title in the usage.
func (fs *flagSet) group(title string) {
	fs.closeGroup()
	fs.groups = append(fs.groups, title)
}

// closeGroup assigns the flags registered since the last group to it.
func (fs *flagSet) closeGroup() {
	if len(fs.groups) == 0 {
		return
	}
	if fs.groupOf == nil {
		fs.groupOf = map[string]string{}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := fs.groupOf[f.Name]; !ok {
			fs.groupOf[f.Name] = fs.groups[len(fs.groups)-1]
		}
	})
}

func (fs *flagSet) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", fs.use, strings.TrimSpace(fs.desc)+"\n")
	if len(fs.groups) == 0 {
		fmt.Fprintf(w, "Flags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	} else {
		fs.closeGroup()
		for _, g := range fs.groups {
			fmt.Fprintf(w, "%s:\n", g)
			fs.VisitAll(func(f *flag.Flag) {
				if fs.groupOf[f.Name] == g {
					printFlag(w, f)
				}
			})
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "\n%s", exitCodes)
}

// printFlag writes one flag's usage as flag.PrintDefaults does.
func printFlag(w io.Writer, f *flag.Flag) {
	name, usage := flag.UnquoteUsage(f)
	line := "  -" + f.Name
	if name != "" {
		line += " " + name
	}
	if len(line) <= 4 {
		line += "\t"
	} else {
		line += "\n    \t"
	}
	line += strings.ReplaceAll(usage, "\n", "\n    \t")
	if def := f.DefValue; def != "" && def != "0" && def != "false" && def != "0s" {
		if name == "string" {
			line += fmt.Sprintf(" (default %q)", def)
		} else {
			line += fmt.Sprintf(" (default %v)", def)
		}
	}
	fmt.Fprintln(w, line)
}

// parse parses args, with flags before, between or after the positional
// arguments, which it returns. done is set when the command must stop at once
// with code: after --help (0) or a usage error (2, with the error printed).
func (fs *flagSet) parse(args []string) (pos []string, code int, done bool) {
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.printUsage(fs.c.stdout)
			return nil, exitOK, true
		}
		if err != nil {
			return nil, fs.usageError("%v", err), true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, false
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), 0, false
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// usageError prints a usage error and returns the usage exit status.
func (fs *flagSet) usageError(format string, a ...any) int {
	fmt.Fprintf(fs.c.stderr, "forgehooks %s: %s\nRun 'forgehooks %s --help' for usage.\n", fs.Name(), fmt.Sprintf(format, a...), fs.Name())
	return exitUsage
}

// fail prints a failure and returns the failure exit status. A message that
// starts with the command's own name (a package's error prefix, as in
// "inbox: ...") loses it: "forgehooks inbox: inbox: ..." says it twice.
func (fs *flagSet) fail(format string, a ...any) int {
	msg := strings.TrimPrefix(fmt.Sprintf(format, a...), fs.Name()+": ")
	fmt.Fprintf(fs.c.stderr, "forgehooks %s: %s\n", fs.Name(), msg)
	return exitFailure
}

// secretFlag registers --secret.
func (fs *flagSet) secretFlag() *string {
	return fs.String("secret", "", "webhook secret, as set on the forge (default: $"+secretEnv+")")
}

// secret returns the --secret value or the environment's.
func (fs *flagSet) secret(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return fs.c.getenv(secretEnv)
}

// noSecret is the usage error for a command that needs a secret.
func (fs *flagSet) noSecret() int {
	return fs.usageError("no webhook secret: pass --secret S or set %s (the secret entered in the forge's webhook settings)", secretEnv)
}

// parseWithSecret is parse for a command that needs a secret: with no
// --secret and none in the environment it is done, with noSecret's code.
func (fs *flagSet) parseWithSecret(args []string, secretF *string) (pos []string, secret string, code int, done bool) {
	if pos, code, done = fs.parse(args); done {
		return pos, "", code, true
	}
	if secret = fs.secret(*secretF); secret == "" {
		return pos, "", fs.noSecret(), true
	}
	return pos, secret, 0, false
}

// logger returns the command's logger: text on stderr, or JSON with --json.
func (fs *flagSet) logger(json bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if json {
		return slog.New(slog.NewJSONHandler(fs.c.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(fs.c.stderr, opts))
}

// stdinPiped reports whether stdin may hold a payload: it is not a terminal
// (nor /dev/null or another character device). A reader that is not a file, as
// tests give, counts as piped.
func (fs *flagSet) stdinPiped() bool {
	if f, ok := fs.c.stdin.(*os.File); ok {
		st, err := f.Stat()
		return err == nil && st.Mode()&os.ModeCharDevice == 0
	}
	return fs.c.stdin != nil
}

// readPayload reads the payload from the file named by the one positional
// argument ("-" for stdin), or from stdin when there is none.
func (fs *flagSet) readPayload(pos []string) ([]byte, int, bool) {
	switch len(pos) {
	case 0:
		if !fs.stdinPiped() {
			return nil, fs.usageError("no payload: give a file, or pipe it to stdin"), false
		}
		b, err := io.ReadAll(fs.c.stdin)
		if err != nil {
			return nil, fs.fail("reading stdin: %v", err), false
		}
		return b, 0, true
	case 1:
		if pos[0] == "-" {
			return fs.readPayload(nil)
		}
		b, err := os.ReadFile(pos[0])
		if errors.Is(err, os.ErrNotExist) {
			return nil, fs.usageError("payload file %s does not exist: give an existing file, or - to read stdin", pos[0]), false
		}
		if err != nil {
			return nil, fs.fail("%v", err), false
		}
		return b, 0, true
	default:
		return nil, fs.usageError("one payload file at most, got %d arguments", len(pos)), false
	}
}

// checkHTTPURL and checkListenAddr check flag values as the receiver checks
// its options, so that a typo is a usage error with a hint rather than a
// connection failure.
var (
	checkHTTPURL    = receiver.CheckURL
	checkListenAddr = receiver.CheckListenAddr
)

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

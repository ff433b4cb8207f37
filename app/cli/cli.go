package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codexrelay/codexrelay/app"
)

// CLI runs the commands of codexrelay; the tray app is started by main without arguments.
type CLI struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Options        app.Options // passed to app.Open
	// Signals, when set, replaces SIGINT/SIGTERM for `serve` (tests).
	Signals <-chan os.Signal

	// opened is the app the command opened (nil: none); toldNewKey says that the command
	// itself said a new install turned the local key on.
	opened     *app.App
	toldNewKey bool
}

// A command is one entry of the command table: a command such as `serve`, a group such as
// `accounts`, or a sub-command such as `accounts add`. The listing in the usage, the -h help
// and the usage errors are all generated from these entries, so that what the CLI says about
// a command cannot drift from what the command accepts.
type command struct {
	name    string   // the word that selects it
	usage   []string // the synopsis after the command's path, one entry per form; empty: args
	summary string   // one line for the listings
	details string   // more for its -h help; optional
	hidden  bool     // internal: left out of the listings, though it runs

	args             string // its positional arguments as the synopsis shows them ("OLD NEW")
	minArgs, maxArgs int    // how many positional arguments it takes; maxArgs -1: no limit
	tooMany          string // the message for too many arguments, where the generic one misleads

	// flags declares the command's flags on a fresh FlagSet and returns the function that runs
	// the command, which reads the parsed values through the variables it closes over (so
	// that every run, in tests many in one process, starts from the defaults). A command
	// without flags sets run instead; a group with neither only selects a sub-command.
	flags func(fs *flag.FlagSet) runFunc
	run   runFunc

	// flagOf names the flag or argument of this command that gave the value a app.FieldError
	// names (e.g. "--to" for the position), given the positional arguments; nil or "": none,
	// and the error is shown as the app words it.
	flagOf func(field string, args []string) string

	subs []*command // a group's sub-commands, in the order the listings show them
}

// runFunc runs a command with its positional arguments once its flags are parsed.
type runFunc func(c *CLI, args []string) error

// root is the command table. It is set in init, not by an initializer, because `help` reads
// it: an initializer that reached it again through the help command would be a cycle.
var root *command

func init() {
	root = &command{
		name:    "codexrelay",
		summary: "Codex Relay: one loopback endpoint for all your OpenAI and ChatGPT accounts.",
		details: `Environment: CODEXRELAY_LISTEN, MODELS_CACHE_MS, MODELS_STALE_WHILE_REVALIDATE,
MODELS_STALE_MAX_AGE_MS, MODELS_REFRESH_INTERVAL_MS, CODEXRELAY_LOG_LEVEL (debug|info|warn).`,
		subs: []*command{serveCommand, statusCommand, pauseCommand, resumeCommand, accountsCommand, codexConfigCommand, localKeyCommand,
			settingsCommand, aliasesCommand, usageCommand, benchCommand, versionCommand, helpCommand},
	}
}

// versionSummary covers both forms of version (-h listed it beside --check alone).
const versionSummary = "print the version, the VCS revision it was built from and whether the tree was modified " +
	"(-v and --version too); with --check, ask the release feed whether a newer release exists"

// versionCommand is `codexrelay version` (and --version, -v).
var versionCommand = &command{
	name:    "version",
	usage:   []string{"[--json | --check]"},
	summary: versionSummary,
	flags: func(fs *flag.FlagSet) runFunc {
		asJSON := fs.Bool("json", false, "print one JSON object")
		check := fs.Bool("check", false, "ask the release feed whether a newer release exists (needs the update-check setting on)")
		return func(c *CLI, _ []string) error {
			b := app.ReadBuild()
			if *check {
				return c.checkForUpdate(b)
			}
			if *asJSON {
				return json.NewEncoder(c.Stdout).Encode(b)
			}
			fmt.Fprintln(c.Stdout, "codexrelay", b)
			return nil
		}
	},
}

// helpCommand is `codexrelay help [COMMAND...]`, the same as `codexrelay [COMMAND...] -h`.
var helpCommand = &command{
	name:    "help",
	args:    "[COMMAND...]",
	maxArgs: -1,
	summary: "show this usage, or a command's (the same as COMMAND -h)",
	run:     (*CLI).help,
}

// help prints the help of the command args name (the whole usage without any).
func (c *CLI) help(args []string) error {
	cmd, path, _, err := resolve(args)
	if err != nil {
		return err
	}
	printHelp(c.Stdout, cmd, path)
	return nil
}

// Run executes args (without the program name) and returns the exit code: 0 on success and
// for help, 1 when the command failed, 2 for a command line it does not accept.
func (c *CLI) Run(args []string) int {
	if len(args) == 0 {
		printHelp(c.Stderr, root, root.name)
		return 2
	}
	if args[0] == "--version" || args[0] == "-v" {
		args = append([]string{"version"}, args[1:]...)
	}
	err := c.dispatch(args)
	c.tellNewKey()
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(c.Stderr, "codexrelay: %s; run '%s -h' for usage\n", ue.msg, ue.path)
		return 2
	}

	fmt.Fprintf(c.Stderr, "codexrelay: %v%s\n", err, cliAdvice(err))
	return 1
}

// dispatch finds the command args name and runs it, or prints its help when -h or --help is
// among its arguments.
func (c *CLI) dispatch(args []string) error {
	args, help := withoutHelp(args)
	cmd, path, args, err := resolve(args)
	switch {
	case err != nil:
		return err
	case help:
		printHelp(c.Stdout, cmd, path)
		return nil
	}
	fs, run := cmd.flagSet(path)
	pos, err := parse(fs, args)
	if err == nil {
		err = cmd.check(path, run, pos)
	}
	if err == nil {
		err = run(c, pos)
	}
	return cmd.explain(err, path, pos)
}

// withoutHelp removes -h and --help (and Go's -help and --h) from args, up to a "--", and
// says whether there was one.
func withoutHelp(args []string) ([]string, bool) {
	out := make([]string, 0, len(args))
	help := false
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...), help
		}
		switch a {
		case "-h", "--h", "-help", "--help":
			help = true
		default:
			out = append(out, a)
		}
	}
	return out, help
}

// resolve follows the sub-command names at the start of args down from the root and returns
// the command they lead to, its path ("codexrelay accounts add") and the rest of args.
func resolve(args []string) (*command, string, []string, error) {
	cmd, path := root, root.name
	for len(cmd.subs) > 0 && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub := cmd.sub(args[0])
		if sub == nil {
			what := "command"
			if cmd != root {
				what = cmdName(path) + " sub-command"
			}
			msg := fmt.Sprintf("unknown %s %q", what, args[0])
			if s := app.Suggest(args[0], cmd.subNames()); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return cmd, path, nil, &usageError{msg: msg, path: path}
		}
		cmd, path, args = sub, path+" "+sub.name, args[1:]
	}
	return cmd, path, args, nil
}

// sub returns the sub-command called name, hidden ones included, or nil.
func (cmd *command) sub(name string) *command {
	for _, s := range cmd.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

// subNames lists the names of the sub-commands the listings show.
func (cmd *command) subNames() []string {
	var names []string
	for _, s := range cmd.subs {
		if !s.hidden {
			names = append(names, s.name)
		}
	}
	return names
}

// flagSet returns a fresh FlagSet with cmd's flags, named after its path, and the function
// that runs cmd with them (nil for a group).
func (cmd *command) flagSet(path string) (*flag.FlagSet, runFunc) {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by Run, help by printHelp
	if cmd.flags != nil {
		return fs, cmd.flags(fs)
	}
	return fs, cmd.run
}

// check refuses a group without its sub-command and a wrong number of positional arguments.
func (cmd *command) check(path string, run runFunc, args []string) error {
	name := cmdName(path)
	switch {
	case run == nil:
		return usagef("%s needs a sub-command: %s", name, strings.Join(cmd.subNames(), ", "))
	case len(args) < cmd.minArgs:
		return usagef("%s needs %s", name, cmd.args)
	case cmd.maxArgs < 0 || len(args) <= cmd.maxArgs:
		return nil
	case cmd.tooMany != "":
		return usagef("%s", cmd.tooMany)
	case cmd.maxArgs == 0:
		return usagef("%s takes no argument", name)
	}
	// Arguments are never echoed: one may be a key given where stdin was meant.
	return usagef("%s takes only %s, not %d arguments", name, cmd.args, len(args))
}

// explain ties err to the command line of cmd: a usage error to the command's help, and a
// FieldError (a value the app refuses for what it is: not valid, out of range) to the flag or
// argument that gave the value; it is the command line's mistake, so a usage error too.
func (cmd *command) explain(err error, path string, args []string) error {
	var ue *usageError
	if errors.As(err, &ue) && ue.path == "" {
		ue.path = path
	}
	var fe *app.FieldError
	if errors.As(err, &fe) {
		if cmd.flagOf != nil {
			if name := cmd.flagOf(fe.Field, args); name != "" {
				err = &flagError{flag: name, err: fe}
			}
		}
		return &usageError{msg: err.Error(), path: path}
	}
	return err
}

// cmdName is the command of a path without the program name ("accounts add"), or the
// program name for the root.
func cmdName(path string) string {
	if name, ok := strings.CutPrefix(path, root.name+" "); ok {
		return name
	}
	return path
}

// usageError is a command line a command does not accept: Run prints it on one line with a
// pointer to the command's help and exits 2.
type usageError struct {
	msg  string
	path string // the command whose help to point at; "" until dispatch sets the one that ran
}

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError of the command that runs.
func usagef(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// flagError is a app.FieldError shown against the flag or argument that gave the value:
// "--base-url is required ..." where the message reads on from the flag's name, else
// "--to: position 9 is out of range: ...".
type flagError struct {
	flag string
	err  *app.FieldError
}

func (e *flagError) Error() string {
	if strings.HasPrefix(e.err.Msg, "is ") || strings.HasPrefix(e.err.Msg, "must ") {
		return e.flag + " " + e.err.Msg
	}
	return e.flag + ": " + e.err.Error()
}

func (e *flagError) Unwrap() error { return e.err }

// fieldFlags returns a command's flagOf from a map of fields to the flags that give them.
func fieldFlags(flags map[string]string) func(string, []string) string {
	return func(field string, _ []string) string { return flags[field] }
}

// cliAdvice is what a command line user can run about an error the app words for any
// caller; "" if nothing.
func cliAdvice(err error) string {
	var noAccount app.ErrNoAccount
	var signIn app.ErrSignInAccount
	var noLogin app.ErrNoCodexLogin
	switch {
	case errors.As(err, &noLogin):
		return " (`codexrelay accounts add --kind chatgpt`)"
	case errors.As(err, &noAccount):
		return " (see `codexrelay accounts list`)"
	case errors.As(err, &signIn):
		return " (`codexrelay accounts add --kind chatgpt`)"
	}
	return ""
}

// parse parses flags that may stand before, between or after the positional arguments and
// returns those. A negative number where a flag could start is a value, not a flag, so that
// `settings set ttl-ms -5` reaches the check of the value.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		for len(args) > 0 && isNegativeNumber(args[0]) {
			pos, args = append(pos, args[0]), args[1:]
		}
		if err := fs.Parse(args); err != nil {
			return nil, flagUsageError(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// isNegativeNumber says whether arg is a number with a minus sign, such as -5.
func isNegativeNumber(arg string) bool {
	_, err := strconv.ParseFloat(arg, 64)
	return err == nil && strings.HasPrefix(arg, "-")
}

// flagUsageError turns an error of the flag package into a usageError of the command fs
// belongs to, with a suggestion for a mistyped flag.
func flagUsageError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	// The flag package names flags with one dash; the usage lines, the help and the rest of
	// the messages use two ("flag needs an argument: -listen" -> "--listen needs an argument").
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = "--" + name + " needs an argument"
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			msg = "invalid value " + rest[:i] + " for --" + rest[i+len(" for flag -"):]
		}
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if i := strings.Index(rest, " for -"); i >= 0 {
			msg = "invalid boolean value " + rest[:i] + " for --" + rest[i+len(" for -"):]
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag " + dashed(name)
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := app.Suggest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
	}
	if fs.Name() != root.name {
		msg = cmdName(fs.Name()) + ": " + msg
	}
	return &usageError{msg: msg, path: fs.Name()}
}

// dashed is a flag as the user typed it: "-v" for a letter, "--listen" for a word.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// The listings start a command's summary in summaryColumn and wrap it at lineWidth.
const (
	summaryColumn = 36
	lineWidth     = 100
)

// printHelp writes the help of cmd: its usage line with its summary (for a group, those of
// every command in it), its details and its flags. The root's help is the usage of
// codexrelay.
func printHelp(w io.Writer, cmd *command, path string) {
	if cmd == root {
		fmt.Fprintf(w, "%s\n\n", root.summary)
	}
	fmt.Fprintln(w, "Usage:")
	if cmd == root {
		listLine(w, root.name, "start the tray app (proxy on the configured address)")
	}
	list(w, cmd, path)
	if len(cmd.subs) > 0 {
		fmt.Fprintf(w, "\nRun '%s COMMAND -h' for the flags and details of a command.\n", path)
	}
	if cmd.details != "" {
		fmt.Fprintf(w, "\n%s\n", cmd.details)
	}
	fs, _ := cmd.flagSet(path)
	printFlags(w, fs)
}

// list writes the usage lines of cmd, if it runs, and of the commands under it, each with its
// summary; hidden sub-commands are left out.
func list(w io.Writer, cmd *command, path string) {
	if cmd.flags != nil || cmd.run != nil {
		forms := cmd.usage
		if len(forms) == 0 {
			forms = []string{cmd.args}
		}
		for i, form := range forms {
			summary := ""
			if i == len(forms)-1 {
				summary = cmd.summary
			}
			listLine(w, strings.TrimSpace(path+" "+form), summary)
		}
	}
	for _, sub := range cmd.subs {
		if !sub.hidden {
			list(w, sub, path+" "+sub.name)
		}
	}
}

// listLine writes one usage line with its summary: beside it in the summary column when there
// is room, else from the next line; the summary wraps at the line width.
func listLine(w io.Writer, line, summary string) {
	indent := strings.Repeat(" ", 2+summaryColumn)
	out := "  " + line
	if summary == "" || len(out) >= len(indent) {
		fmt.Fprintln(w, out)
		if summary == "" {
			return
		}
		out = ""
	}
	out += indent[len(out):]
	for i, word := range strings.Fields(summary) {
		switch {
		case i == 0:
		case len(out)+1+len(word) > lineWidth:
			fmt.Fprintln(w, out)
			out = indent
		default:
			out += " "
		}
		out += word
	}
	fmt.Fprintln(w, out)
}

// printFlags writes the flags of fs, if it has any, one a line: "--name ARG", what it does
// and its default. It says what flag.PrintDefaults says, with the double dashes the usage
// lines use.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if arg != "" {
			name += " " + arg
		}
		switch def := f.DefValue; def {
		case "", "0", "false", "0s":
		default:
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isString := g.Get().(string); isString {
					def = strconv.Quote(def)
				}
			}
			usage += fmt.Sprintf(" (default %s)", def)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
}

// open opens the app on the CLI's options and shows a warning the settings left.
func (c *CLI) open() (*app.App, error) {
	a, err := app.Open(c.Options)
	if err != nil {
		return nil, err
	}
	if a.LoadWarning != nil {
		fmt.Fprintf(c.Stderr, "warning: %v\n", a.LoadWarning)
	}
	c.opened = a
	return a, nil
}

// newKeyNote is what a command that created the settings file says of the local key it
// turned on (whichever command creates the file does).
const newKeyNote = "This is a new install, so the relay's local API key is on: clients must send it (`codexrelay local-key show`); `codexrelay codex-config --write` gives it to Codex."

// tellNewKey says, once, that the command created the settings file and turned the local key
// on with it, or that it could not.
func (c *CLI) tellNewKey() {
	if c.opened == nil || c.toldNewKey {
		return
	}
	made, err := c.opened.NewInstallKey()
	switch {
	case made:
		fmt.Fprintln(c.Stderr, newKeyNote)
	case err != nil:
		fmt.Fprintf(c.Stderr, "warning: this is a new install, but the local API key could not be turned on (%v): any local user can use the relay until `codexrelay local-key on` succeeds.\n", err)
	}
	c.toldNewKey = true
}

// configDir is the settings folder this CLI works on.
func (c *CLI) configDir() string {
	if c.Options.ConfigDir != "" {
		return c.Options.ConfigDir
	}
	return app.DefaultConfigDir()
}

// change opens the app and makes one change with do, which returns what it did; it says so,
// and then whether a running Codex Relay applied it.
func (c *CLI) change(do func(a *app.App) (string, error)) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	did, err := do(a)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.Stdout, did)
	c.applied(a)
	return nil
}

// applied says whether a running Codex Relay follows the change just written: it waits up to
// two seconds for the relay to report the settings generation on /health (signed: a program
// that is not the relay cannot claim it applied anything).
func (c *CLI) applied(a *app.App) {
	gen := a.Settings().Generation
	start := time.Now()
	for {
		info := app.RunningInstance(a.ConfigDir())
		switch {
		case info == nil:
			fmt.Fprintln(c.Stdout, "No Codex Relay is running: it will use this when it starts.")
			return
		case info.Paused || info.Listen == "":
			fmt.Fprintf(c.Stdout, "Codex Relay is running (%s); it follows the settings file and serves with this when it serves again.\n", info)
			return
		}
		rc, err := a.RunningRelay(500 * time.Millisecond)
		if err != nil {
			fmt.Fprintf(c.Stdout, "Codex Relay is running, but whether it applied this is not known: %v.\n", err)
			return
		}
		if rc != nil { // nil: it stopped serving meanwhile; look again
			got, listen, err := healthOf(rc)
			if errors.Is(err, app.ErrNotTheRelay) {
				fmt.Fprintf(c.Stdout, "Codex Relay is running (%s), but %v.\n", info, err)
				return
			}
			if err == nil && got >= gen {
				if listen != "" {
					// What the relay says (signed) is newer than instance.json, which it may
					// not have rewritten yet after a move.
					info.Listen = listen
				}
				fmt.Fprintf(c.Stdout, "The running Codex Relay (%s) applied it in %d ms.\n", info, time.Since(start).Milliseconds())
				if want := a.Settings().Listen; want != "" && listen != "" && want != listen && a.ListenPinned() == "" {
					fmt.Fprintf(c.Stdout, "It still listens on %s, not %s: its address is fixed (by --listen or CODEXRELAY_LISTEN) or the new port could not be opened. Restart it to move.\n", listen, want)
				}
				return
			}
		}
		if time.Since(start) > 2*time.Second {
			fmt.Fprintf(c.Stdout, "The running Codex Relay (%s) has not applied it within 2 s; see its log.\n", info)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// healthOf reads the settings generation and the listen address the relay reports.
func healthOf(rc *app.RelayClient) (uint64, string, error) {
	h, err := rc.Health(context.Background())
	return h.SettingsGeneration, h.Listen, err
}

// plural picks the word for n things.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// checkForUpdate is `version --check`: the update notice, only with the update-check setting on.
func (c *CLI) checkForUpdate(b app.Build) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, ok, err := a.CheckForUpdate(ctx, nil)
	switch {
	case err != nil:
		return err
	case !ok:
		fmt.Fprintln(c.Stdout, "the update check is off (no network call): `codexrelay settings set update-check true` turns it on")
	case r.Newer:
		fmt.Fprintf(c.Stdout, "a newer release exists: %s (this is %s) %s\n", r.Version, b.Version, r.URL)
	default:
		fmt.Fprintf(c.Stdout, "%s is the latest release (the feed names %s)\n", b.Version, r.Version)
	}
	return nil
}

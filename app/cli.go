package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/bench"
)

// Version is set at build time (-ldflags "-X github.com/codexrelay/codexrelay/app.Version=...").
var Version = "dev"

// CLI runs the sub-commands of codexrelay; the tray app is started by main without arguments.
type CLI struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Options        Options // passed to Open
	// Signals, when set, replaces SIGINT/SIGTERM for `serve` (tests).
	Signals <-chan os.Signal
}

const usage = `Codex Relay: one loopback endpoint for all your OpenAI and ChatGPT accounts.

Usage:
  codexrelay                          start the tray app (proxy on the configured address)
  codexrelay serve [--listen ADDR] [--allow-remote]
                                      run the proxy headless in the foreground
  codexrelay accounts list [--json]   accounts and their state (never a secret)
  codexrelay accounts add --name N --kind openai --base-url URL [--api responses|chat]
                                      add an API-key account; the key is read from stdin
  codexrelay accounts add --kind chatgpt [--name N] [--device]
                                      sign in with ChatGPT in the browser (or with a code)
  codexrelay accounts import-codex [--path FILE]
                                      import the Codex CLI login (~/.codex/auth.json)
  codexrelay accounts rename OLD NEW
  codexrelay accounts remove N        remove an account and its keychain entry
  codexrelay accounts enable|disable N
  codexrelay accounts move N --to K   put account N at position K of the priority order
  codexrelay codex-config [--write]   print, or merge with a backup, the provider block for
                                      ~/.codex/config.toml
  codexrelay local-key on|off|show    require a local API key from clients
  codexrelay settings [set KEY VALUE] show or change a setting: listen, strategy
                                      (priority|round-robin), stale-while-revalidate (true|false),
                                      stale-max-age-ms, ttl-ms, header-timeout-ms,
                                      first-event-timeout-ms, stream-idle-timeout-ms
  codexrelay aliases [set NAME MODEL [MODEL...] | remove NAME]
                                      model aliases; the targets are tried in order
  codexrelay bench serialization [--samples 500 --items 10000 --attempts 3] [--json]
  codexrelay bench catalog [--samples 50 --concurrent 8 --delay-ms 50] [--json]
  codexrelay bench proxy [--in-process] [--json]
                                      added latency against direct, event delay, load and memory
  codexrelay version

Environment: CODEXRELAY_LISTEN, MODELS_CACHE_MS, MODELS_STALE_WHILE_REVALIDATE,
MODELS_STALE_MAX_AGE_MS, MODELS_REFRESH_INTERVAL_MS, CODEXRELAY_LOG_LEVEL (debug|info|warn).
`

// Run executes args (without the program name) and returns the exit code.
func (c *CLI) Run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.Stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = c.serve(args[1:])
	case "accounts":
		err = c.accounts(args[1:])
	case "local-key":
		err = c.localKey(args[1:])
	case "settings":
		err = c.settingsCmd(args[1:])
	case "codex-config":
		err = c.codexConfig(args[1:])
	case "aliases":
		err = c.aliasesCmd(args[1:])
	case "bench":
		err = c.bench(args[1:])
	case "version", "--version":
		fmt.Fprintln(c.Stdout, "codexrelay", Version)
	case "help", "-h", "--help":
		fmt.Fprint(c.Stdout, usage)
	default:
		fmt.Fprintf(c.Stderr, "codexrelay: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(c.Stderr, "codexrelay: %v\n", err)
			return 2
		}
		var fe *FieldError
		if errors.As(err, &fe) && cliFlags[fe.Field] != "" {
			if strings.HasPrefix(fe.Msg, "is ") || strings.HasPrefix(fe.Msg, "must ") {
				fmt.Fprintf(c.Stderr, "codexrelay: %s %s\n", cliFlags[fe.Field], fe.Msg)
			} else {
				fmt.Fprintf(c.Stderr, "codexrelay: %s: %v\n", cliFlags[fe.Field], fe)
			}
			return 1
		}
		fmt.Fprintf(c.Stderr, "codexrelay: %v\n", err)
		return 1
	}
	return 0
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cliFlags names the flag that gives each field a FieldError can name.
var cliFlags = map[string]string{
	FieldName: "--name", FieldKind: "--kind", FieldBaseURL: "--base-url", FieldAPI: "--api",
	FieldPosition: "--to", FieldKey: "the API key on stdin",
}

type usageError string

func (e usageError) Error() string { return string(e) }

// parse parses flags that may stand before, between or after the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError(err.Error())
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// Logger is the structured logger of the app: text on stderr, level from CODEXRELAY_LOG_LEVEL.
func Logger(w io.Writer, getenv func(string) string) *slog.Logger {
	lvl := slog.LevelInfo
	if v := getenv("CODEXRELAY_LOG_LEVEL"); v != "" {
		lvl.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl}))
}

func (c *CLI) open() (*App, error) {
	a, err := Open(c.Options)
	if err != nil {
		return nil, err
	}
	if a.LoadWarning != nil {
		fmt.Fprintf(c.Stderr, "warning: %v\n", a.LoadWarning)
	}
	return a, nil
}

func (c *CLI) serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "", "address to listen on (default $CODEXRELAY_LISTEN, the setting, or "+DefaultListen+")")
	allowRemote := fs.Bool("allow-remote", false, "allow a non-loopback address (needs the local API key)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if c.Options.Logger == nil {
		getenv := c.Options.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		c.Options.Logger = Logger(c.Stderr, getenv)
	}
	SetMemoryLimit(os.Getenv)
	inst, other, err := ClaimInstance(c.configDir(), "serve")
	if err != nil {
		return err
	}
	if other != nil {
		return fmt.Errorf("Codex Relay is already running: %s. Use that relay, or stop it first", other)
	}
	defer inst.Release()
	a, err := c.open()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sig := c.Signals
	if sig == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(ch)
		sig = ch
	}
	svc := a.NewServeService(*listen, *allowRemote)
	svc.Instance = inst
	if err := svc.Start(); err != nil {
		return err
	}
	defer svc.Stop()
	go a.Watch(ctx)
	if len(a.Accounts()) == 0 {
		a.log.Warn("no upstream account yet: add one with `codexrelay accounts add` (requests get 503 until then)")
	}
	if orphans, err := a.OrphanSecrets(); err == nil && len(orphans) > 0 {
		a.log.Warn("keychain entries that belong to no account: remove them with `codexrelay accounts prune`", "entries", len(orphans))
	}
	select {
	case <-sig:
		return nil
	case <-svc.Done():
		return svc.Status().Err
	}
}

// configDir is the settings folder this CLI works on.
func (c *CLI) configDir() string {
	if c.Options.ConfigDir != "" {
		return c.Options.ConfigDir
	}
	return DefaultConfigDir()
}

// applied says whether a running Codex Relay follows the change just written: it waits up to
// two seconds for the relay to report the settings generation on /health.
func (c *CLI) applied(a *App) {
	gen := a.Settings().Generation
	start := time.Now()
	client := &http.Client{Timeout: 500 * time.Millisecond}
	for {
		info := RunningInstance(a.ConfigDir())
		switch {
		case info == nil:
			fmt.Fprintln(c.Stdout, "No Codex Relay is running: it will use this when it starts.")
			return
		case info.Paused || info.Listen == "":
			fmt.Fprintf(c.Stdout, "Codex Relay is running (%s); it follows the settings file and serves with this when it serves again.\n", info)
			return
		}
		if got, listen, err := healthOf(client, info.Listen); err == nil && got >= gen {
			fmt.Fprintf(c.Stdout, "The running Codex Relay (%s) applied it in %d ms.\n", info, time.Since(start).Milliseconds())
			if want := a.Settings().Listen; want != "" && listen != "" && want != listen && a.ListenPinned() == "" {
				fmt.Fprintf(c.Stdout, "It still listens on %s, not %s: its address is fixed (by --listen or CODEXRELAY_LISTEN) or the new port could not be opened. Restart it to move.\n", listen, want)
			}
			return
		}
		if time.Since(start) > 2*time.Second {
			fmt.Fprintf(c.Stdout, "The running Codex Relay (%s) has not applied it within 2 s; see its log.\n", info)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// healthOf reads the settings generation and the listen address a relay reports.
func healthOf(client *http.Client, addr string) (uint64, string, error) {
	resp, err := client.Get("http://" + addr + "/health")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var h struct {
		Generation uint64 `json:"settings_generation"`
		Listen     string `json:"listen"`
	}
	if resp.StatusCode != http.StatusOK {
		return 0, "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h.Generation, h.Listen, err
}

func (c *CLI) accounts(args []string) error {
	if len(args) == 0 {
		return usageError("accounts needs a sub-command: list, add, remove, enable, disable, move")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("accounts "+sub, flag.ContinueOnError)
	switch sub {
	case "list":
		asJSON := fs.Bool("json", false, "print JSON")
		if _, err := parse(fs, args); err != nil {
			return err
		}
		a, err := c.open()
		if err != nil {
			return err
		}
		if err := c.printAccounts(a, *asJSON); err != nil {
			return err
		}
		if orphans, err := a.OrphanSecrets(); err == nil && len(orphans) > 0 && !*asJSON {
			fmt.Fprintf(c.Stdout, "\n%d keychain %s of Codex Relay belong to no account (left by an interrupted add or an older version): remove them with `codexrelay accounts prune`.\n",
				len(orphans), plural(len(orphans), "entry", "entries"))
		}
		return nil
	case "add":
		name := fs.String("name", "", "account name")
		kind := fs.String("kind", "", "openai or chatgpt")
		baseURL := fs.String("base-url", "", "upstream base URL, e.g. https://api.openai.com/v1")
		api := fs.String("api", "responses", "wire API of an openai account: responses or chat")
		device := fs.Bool("device", false, "chatgpt: sign in with a code on another device (no browser here)")
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) > 0 {
			// Never echo it: it may well be the key itself.
			return usageError("unexpected argument after the flags: the API key is read from stdin, never from the command line")
		}
		if *kind == "" || (*name == "" && *kind != "chatgpt") {
			return usageError("accounts add needs --name and --kind")
		}
		if *kind == "chatgpt" {
			return c.signIn(*name, *baseURL, *device)
		}
		if *kind != "openai" {
			return usageError(fmt.Sprintf("unknown --kind %q: use openai or chatgpt", *kind))
		}
		key, err := c.readKey()
		if err != nil {
			return err
		}
		a, err := c.open()
		if err != nil {
			return err
		}
		m, err := a.AddAccount(NewAccount{Name: *name, Kind: *kind, BaseURL: *baseURL, API: *api}, Secret{APIKey: key})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.Stdout, "Added account %q (%s, %s API, %s); its key is in the system keychain.\n", m.Name, m.Kind, m.API, m.BaseURL)
		c.applied(a)
		return nil
	case "import-codex":
		path := fs.String("path", "", "the Codex auth.json (default $CODEX_HOME/auth.json or ~/.codex/auth.json)")
		if _, err := parse(fs, args); err != nil {
			return err
		}
		a, err := c.open()
		if err != nil {
			return err
		}
		m, outcome, err := a.ImportCodex(*path)
		if err != nil {
			return err
		}
		switch outcome {
		case Unchanged:
			fmt.Fprintf(c.Stdout, "The Codex login is already account %q; nothing changed.\n", m.Name)
			return nil
		case Renewed:
			fmt.Fprintf(c.Stdout, "Account %q now has the Codex login's new sign-in; its tokens are in the system keychain.\n", m.Name)
		default:
			fmt.Fprintf(c.Stdout, "Imported the Codex login as account %q (%s); its tokens are in the system keychain.\n", m.Name, m.Kind)
		}
		c.applied(a)
		fmt.Fprintln(c.Stdout)
		fmt.Fprintln(c.Stdout, "From now on let Codex talk through the relay, so that only one program refreshes this sign-in")
		fmt.Fprintln(c.Stdout, "(refresh tokens are single-use: two programs refreshing the same one log each other out).")
		fmt.Fprintln(c.Stdout, "Point Codex at the relay with:  codexrelay codex-config --write")
		return nil
	case "rename":
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 2 {
			return usageError("accounts rename needs the old and the new name")
		}
		a, err := c.open()
		if err != nil {
			return err
		}
		if err := a.RenameAccount(pos[0], pos[1]); err != nil {
			return err
		}
		fmt.Fprintf(c.Stdout, "Renamed account %q to %q.\n", pos[0], pos[1])
		c.applied(a)
		return nil
	case "remove", "enable", "disable", "move":
		to := 0
		if sub == "move" {
			fs.IntVar(&to, "to", 0, "new position, 1 = tried first")
		}
		pos, err := parse(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageError(fmt.Sprintf("accounts %s needs exactly one account name", sub))
		}
		a, err := c.open()
		if err != nil {
			return err
		}
		var msg string
		switch sub {
		case "remove":
			err = a.RemoveAccount(pos[0])
			msg = fmt.Sprintf("Removed account %q and its keychain entry.", pos[0])
		case "enable":
			err = a.SetAccountEnabled(pos[0], true)
			msg = fmt.Sprintf("Enabled account %q: it takes requests again.", pos[0])
		case "disable":
			err = a.SetAccountEnabled(pos[0], false)
			msg = fmt.Sprintf("Disabled account %q: it takes no request until you enable it.", pos[0])
		case "move":
			if to == 0 {
				return usageError("accounts move needs --to K")
			}
			var n int
			n, err = a.MoveAccount(pos[0], to)
			msg = fmt.Sprintf("Moved account %q to position %d of %d.", pos[0], to, n)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(c.Stdout, msg)
		c.applied(a)
		return nil
	case "prune":
		if pos, err := parse(fs, args); err != nil {
			return err
		} else if len(pos) != 0 {
			return usageError("accounts prune takes no argument")
		}
		a, err := c.open()
		if err != nil {
			return err
		}
		removed, err := a.PruneSecrets()
		if err != nil {
			return err
		}
		if len(removed) == 0 {
			fmt.Fprintln(c.Stdout, "Every keychain entry of Codex Relay belongs to an account; nothing to remove.")
			return nil
		}
		fmt.Fprintf(c.Stdout, "Removed %d keychain %s that belonged to no account: %s.\n", len(removed), plural(len(removed), "entry", "entries"), strings.Join(removed, ", "))
		return nil
	}
	return usageError(fmt.Sprintf("unknown accounts sub-command %q", sub))
}

// readKey reads an API key from stdin: the first line, trimmed.
func (c *CLI) readKey() (string, error) {
	if f, ok := c.Stdin.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprint(c.Stderr, "API key (input is read from stdin; pipe it to avoid the terminal): ")
		}
	}
	line, err := bufio.NewReader(io.LimitReader(c.Stdin, 64<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("cannot read the API key from stdin: %w", err)
	}
	key := strings.TrimSpace(line)
	if key == "" {
		return "", errors.New("no API key on stdin: pipe it in, e.g. `printenv OPENAI_API_KEY | codexrelay accounts add ...`")
	}
	return key, nil
}

func (c *CLI) printAccounts(a *App, asJSON bool) error {
	metas := a.Accounts()
	stats, live := a.liveStats()
	type row struct {
		Name    string       `json:"name"`
		Kind    string       `json:"kind"`
		API     string       `json:"api"`
		BaseURL string       `json:"base_url"`
		State   string       `json:"state"`
		Email   string       `json:"email,omitempty"`
		Quota   *proxy.Quota `json:"quota,omitempty"`
		Error   string       `json:"last_error,omitempty"`
	}
	byName := map[string]proxy.AccountStats{}
	for _, s := range stats {
		byName[s.Name] = s
	}
	rows := make([]row, 0, len(metas))
	for _, m := range metas {
		st := byName[m.Name]
		if st.State == "" {
			st.State = "ready"
			if m.Disabled {
				st.State = "disabled"
			}
		}
		rows = append(rows, row{m.Name, m.Kind, m.API, a.baseURL(m), st.State, m.Email, st.Quota, st.LastError})
	}
	if asJSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.Stdout, "no accounts yet: add one with `codexrelay accounts add --name NAME --kind openai --base-url URL` (key on stdin),")
		fmt.Fprintln(c.Stdout, "`codexrelay accounts add --kind chatgpt`, or `codexrelay accounts import-codex`")
		return nil
	}
	pct := func(p float64, reset time.Time) string {
		s := fmt.Sprintf("%.0f%%", p)
		if !reset.IsZero() {
			s += " (resets " + reset.Local().Format("Jan 2 15:04") + ")"
		}
		return s
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tNAME\tKIND\tAPI\tSTATE\t5H USED\tWEEK USED\tBASE URL")
	for i, r := range rows {
		h5, wk := "-", "-"
		if r.Quota != nil {
			h5, wk = pct(r.Quota.PrimaryUsedPercent, r.Quota.PrimaryResetsAt), pct(r.Quota.SecondaryUsedPercent, r.Quota.SecondaryResetsAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, r.Name, r.Kind, r.API, r.State, h5, wk, r.BaseURL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !live {
		fmt.Fprintln(c.Stdout, "(no Codex Relay is running on "+a.ListenAddr()+": states are as stored; quotas read just now)")
	}
	return nil
}

// liveStats asks a Codex Relay running on the configured address for its account states;
// without one, it reads the ChatGPT quotas itself.
func (a *App) liveStats() ([]proxy.AccountStats, bool) {
	addr := a.ListenAddr()
	if info := RunningInstance(a.ConfigDir()); info != nil && info.Listen != "" {
		addr = info.Listen
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/relay/stats", nil)
	if key, _ := a.LocalKey(); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Do(req); err == nil {
		defer resp.Body.Close()
		var snap proxy.Snapshot
		if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&snap) == nil {
			return snap.Accounts, true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.Proxy.RefreshQuotas(ctx)
	return a.Proxy.Stats().Accounts, false
}

func (c *CLI) localKey(args []string) error {
	if len(args) != 1 {
		return usageError("local-key needs on, off or show")
	}
	a, err := c.open()
	if err != nil {
		return err
	}
	switch args[0] {
	case "on":
		key, err := a.SetLocalKey(true)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.Stdout, "Local API key on; clients must send it as a bearer token:\n%s\n", key)
		c.applied(a)
	case "off":
		if _, err := a.SetLocalKey(false); err != nil {
			return err
		}
		fmt.Fprintln(c.Stdout, "Local API key off: clients need no key.")
		c.applied(a)
	case "show":
		key, err := a.LocalKey()
		if err != nil {
			return err
		}
		if key == "" {
			fmt.Fprintln(c.Stdout, "local API key is off")
			return nil
		}
		fmt.Fprintln(c.Stdout, key)
	default:
		return usageError("local-key needs on, off or show")
	}
	return nil
}

func (c *CLI) bench(args []string) error {
	if len(args) == 0 {
		return usageError("bench needs serialization, catalog or proxy")
	}
	fs := flag.NewFlagSet("bench "+args[0], flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	switch args[0] {
	case "serialization":
		samples := fs.Int("samples", 500, "samples of each variant")
		items := fs.Int("items", 10000, "Responses input items in the synthetic payload")
		attempts := fs.Int("attempts", 3, "attempts (accounts tried) per request")
		if _, err := parse(fs, args[1:]); err != nil {
			return err
		}
		if *samples < 1 || *items < 1 || *attempts < 1 {
			return usageError("--samples, --items and --attempts must be at least 1")
		}
		r := bench.Serialization(bench.SerializationOptions{Samples: *samples, Items: *items, Attempts: *attempts})
		if *asJSON {
			return json.NewEncoder(c.Stdout).Encode(r)
		}
		r.Print(c.Stdout)
		return nil
	case "catalog":
		samples := fs.Int("samples", 50, "groups of concurrent requests")
		concurrent := fs.Int("concurrent", 8, "requests per group")
		delay := fs.Int("delay-ms", 50, "simulated discovery time in milliseconds")
		if _, err := parse(fs, args[1:]); err != nil {
			return err
		}
		if *samples < 1 || *concurrent < 1 || *delay < 0 {
			return usageError("--samples and --concurrent must be at least 1, --delay-ms at least 0")
		}
		r := bench.Catalog(bench.CatalogOptions{Samples: *samples, Concurrent: *concurrent, Delay: time.Duration(*delay) * time.Millisecond})
		if *asJSON {
			return json.NewEncoder(c.Stdout).Encode(r)
		}
		r.Print(c.Stdout)
		return nil
	case "proxy":
		small := fs.Int("small", 5000, "small requests per side")
		concurrent := fs.Int("concurrent", 500, "concurrent streams")
		soak := fs.Int("soak", 20000, "sequential requests for the memory soak")
		large := fs.Int("large-concurrent", 2000, "concurrent streams of the larger load")
		rounds := fs.Int("rounds", 5, "times each load is repeated")
		idle := fs.Duration("idle-wait", 60*time.Second, "how long after the loads the relay's memory is read again")
		inProcess := fs.Bool("in-process", false, "run the loads through an in-process relay and bare proxy too (no processes of their own)")
		if _, err := parse(fs, args[1:]); err != nil {
			return err
		}
		opt := bench.ProxyOptions{SmallRequests: *small, Concurrent: *concurrent, SoakRequests: *soak,
			LargeConcurrent: *large, Rounds: *rounds, IdleWait: *idle}
		if !*inProcess {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			opt.StartProcess = bench.StartProcesses(exe, c.Stderr, func(kind string) []string { return []string{"bench", kind + "-process"} })
		}
		r, err := bench.Proxy(opt)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(c.Stdout).Encode(r)
		}
		r.Print(c.Stdout)
		return nil
	case "relay-process", "bare-process":
		// The relay (or the bare ReverseProxy) of `bench proxy` in a process of its own, in
		// front of --upstream; its base URL on the first line of output. Each "settle" line on
		// stdin is answered with the settled RSS in bytes and the goroutine count; it ends when
		// stdin closes (the benchmark stops it, or died).
		upstream := fs.String("upstream", "", "the fake upstream's base URL")
		if _, err := parse(fs, args[1:]); err != nil {
			return err
		}
		kind := strings.TrimSuffix(args[0], "-process")
		return bench.ServeProcess(kind, *upstream, c.Stdin, c.Stdout, func() { SetMemoryLimit(os.Getenv) })
	}
	return usageError(fmt.Sprintf("unknown benchmark %q", args[0]))
}

func (c *CLI) settingsCmd(args []string) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		s := a.Settings()
		cat := a.Proxy.Stats().Catalog
		strategy := s.Strategy
		if strategy == "" {
			strategy = "priority"
		}
		tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "settings file\t%s\n", filepath.Join(a.ConfigDir(), settingsName))
		fmt.Fprintf(tw, "listen\t%s\n", a.ListenAddr())
		fmt.Fprintf(tw, "strategy\t%s\n", strategy)
		fmt.Fprintf(tw, "stale-while-revalidate\t%v\n", cat.SWREnabled)
		fmt.Fprintf(tw, "stale-max-age-ms\t%d\n", cat.StaleMaxAgeMs)
		fmt.Fprintf(tw, "ttl-ms\t%d\n", cat.TTLMs)
		fmt.Fprintf(tw, "local-api-key\t%v\n", s.LocalAPIKey)
		tmo := a.Proxy.Timeouts()
		fmt.Fprintf(tw, "header-timeout-ms\t%d\n", tmo.Header.Milliseconds())
		fmt.Fprintf(tw, "first-event-timeout-ms\t%d\n", tmo.FirstEvent.Milliseconds())
		fmt.Fprintf(tw, "stream-idle-timeout-ms\t%d\n", tmo.StreamIdle.Milliseconds())
		return tw.Flush()
	}
	if len(args) != 3 || args[0] != "set" {
		return usageError("settings takes no argument, or set KEY VALUE")
	}
	key, val := args[1], args[2]
	ms := func() (time.Duration, error) {
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("%s must be a positive number of milliseconds", key)
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	switch key {
	case "listen":
		err = a.SetListen(val)
	case "strategy":
		err = a.SetStrategy(val)
	case "stale-while-revalidate":
		b, perr := strconv.ParseBool(val)
		if perr != nil {
			return usageError("stale-while-revalidate takes true or false")
		}
		err = a.SetStaleWhileRevalidate(b)
	case "stale-max-age-ms":
		d, derr := ms()
		if derr != nil {
			return derr
		}
		err = a.SetCatalogTiming(d, 0)
	case "ttl-ms":
		d, derr := ms()
		if derr != nil {
			return derr
		}
		err = a.SetCatalogTiming(0, d)
	case "header-timeout-ms", "first-event-timeout-ms", "stream-idle-timeout-ms":
		n, perr := strconv.ParseInt(val, 10, 64)
		if perr != nil || n < 0 {
			return fmt.Errorf("%s must be a number of milliseconds (0 restores the default)", key)
		}
		err = a.SetTimeout(strings.TrimSuffix(key, "-timeout-ms"), time.Duration(n)*time.Millisecond)
	default:
		return usageError(fmt.Sprintf("unknown setting %q: use listen, strategy, stale-while-revalidate, stale-max-age-ms, ttl-ms, header-timeout-ms, first-event-timeout-ms or stream-idle-timeout-ms", key))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "Set %s to %s.\n", key, val)
	c.applied(a)
	return nil
}

func (c *CLI) aliasesCmd(args []string) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	switch {
	case len(args) == 0 || (len(args) == 1 && args[0] == "list"):
		aliases := a.Settings().Aliases
		if len(aliases) == 0 {
			fmt.Fprintln(c.Stdout, "no aliases: add one with `codexrelay aliases set NAME MODEL [MODEL...]`")
			return nil
		}
		names := make([]string, 0, len(aliases))
		for k := range aliases {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(c.Stdout, "%s -> %s\n", k, strings.Join(aliases[k], ", "))
		}
		return nil
	case len(args) >= 3 && args[0] == "set":
		if err := a.SetAlias(args[1], args[2:]); err != nil {
			return err
		}
		fmt.Fprintf(c.Stdout, "Alias %s now names %s.\n", args[1], strings.Join(args[2:], ", "))
		c.applied(a)
		return nil
	case len(args) == 2 && args[0] == "remove":
		if err := a.SetAlias(args[1], nil); err != nil {
			return err
		}
		fmt.Fprintf(c.Stdout, "Removed alias %s.\n", args[1])
		c.applied(a)
		return nil
	}
	return usageError("aliases takes list, set NAME MODEL [MODEL...] or remove NAME")
}

func (c *CLI) signIn(name, baseURL string, device bool) error {
	if baseURL != "" {
		return usageError("--base-url is set with CODEXRELAY_CHATGPT_BASE_URL for chatgpt accounts")
	}
	a, err := c.open()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var m AccountMeta
	if device {
		m, err = a.SignInChatGPTDevice(ctx, name, func(d DeviceCode) {
			fmt.Fprintf(c.Stdout, "On any device, open %s and enter the code %s\nWaiting for the sign-in...\n", d.VerificationURL, d.UserCode)
		})
	} else {
		m, err = a.SignInChatGPT(ctx, name, func(u string) error {
			fmt.Fprintf(c.Stdout, "Opening the ChatGPT sign-in in your browser. If nothing opens, visit:\n%s\n", u)
			return openBrowser(u)
		})
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "Signed in: account %q (%s); its tokens are in the system keychain.\n", m.Name, m.Email)
	c.applied(a)
	return nil
}

func (c *CLI) codexConfig(args []string) error {
	fs := flag.NewFlagSet("codex-config", flag.ContinueOnError)
	write := fs.Bool("write", false, "merge the block into the Codex config (a backup is written first)")
	path := fs.String("path", "", "the Codex config (default $CODEX_HOME/config.toml or ~/.codex/config.toml)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	a, err := c.open()
	if err != nil {
		return err
	}
	if !*write {
		fmt.Fprint(c.Stdout, a.CodexConfig())
		return nil
	}
	w, err := a.WriteCodexConfig(*path)
	if err != nil {
		return err
	}
	switch w.Change {
	case Unchanged:
		fmt.Fprintf(c.Stdout, "%s already points Codex at the relay; nothing changed.\n", w.Path)
	case ConfigCreated:
		fmt.Fprintf(c.Stdout, "Created %s: it points Codex at the relay (model_provider = \"codexrelay\").\n", w.Path)
	default:
		fmt.Fprintf(c.Stdout, "Updated %s: it points Codex at the relay (model_provider = \"codexrelay\"); the previous file is kept as %s.\n", w.Path, w.Backup)
	}
	return nil
}

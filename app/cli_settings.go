package app

import (
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// settingsCommand is `codexrelay settings`: show the settings, or change one.
var settingsCommand = &command{
	name:    "settings",
	summary: "show the settings",
	run:     func(c *CLI, _ []string) error { return c.showSettings() },
	subs: []*command{{
		name: "set", args: "KEY VALUE", minArgs: 2, maxArgs: 2,
		summary: "change a setting (-h lists the keys and their values)",
		details: settingsHelp(),
		run:     (*CLI).setSetting,
		// A problem with the value is told against the key that was set.
		flagOf: func(_ string, args []string) string { return args[0] },
	}},
}

// settingKeys are the keys of `settings set` and the values they take, in the order the
// help shows them.
var settingKeys = [][2]string{
	{"listen", "host:port on the loopback interface, e.g. " + DefaultListen},
	{"strategy", "priority (accounts in list order), round-robin (they take turns) or most-quota-left (the most headroom first)"},
	{"stale-while-revalidate", "true or false: serve a stale model catalog while it refreshes"},
	{"stale-max-age-ms", "how old a stale catalog may be, in milliseconds"},
	{"ttl-ms", "how long the catalog is fresh, in milliseconds"},
	{"header-timeout-ms", "upstream timeout for the response headers, in milliseconds (0: the default)"},
	{"first-event-timeout-ms", "upstream timeout for a stream's first event, in milliseconds (0: the default)"},
	{"stream-idle-timeout-ms", "upstream timeout between a stream's events, in milliseconds (0: the default)"},
	{"hold-seconds", "how long a request waits, sending nothing, for a resting pool to come back (0: the default, 30; -1: never)"},
	{"usage-ledger", "true or false: record each request's tokens in the usage ledger (see codexrelay usage)"},
	{"usage-retention-days", "days the usage ledger keeps each request (0: the default, 400); daily totals stay"},
}

// settingNames lists the keys of `settings set`.
func settingNames() []string {
	names := make([]string, len(settingKeys))
	for i, k := range settingKeys {
		names[i] = k[0]
	}
	return names
}

// settingsHelp is the help's table of the keys of `settings set`.
func settingsHelp() string {
	var b strings.Builder
	b.WriteString("Keys:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, k := range settingKeys {
		fmt.Fprintf(tw, "  %s\t%s\n", k[0], k[1])
	}
	tw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// showSettings prints the settings in effect and the file they are kept in.
func (c *CLI) showSettings() error {
	a, err := c.open()
	if err != nil {
		return err
	}
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
	hold := "never"
	if d := s.hold(); d == 0 {
		hold = strconv.Itoa(int(proxy.DefaultHold.Seconds()))
	} else if d > 0 {
		hold = strconv.Itoa(s.HoldSeconds)
	}
	fmt.Fprintf(tw, "hold-seconds\t%s\n", hold)
	fmt.Fprintf(tw, "usage-ledger\t%v (%s)\n", !s.Usage.Off, a.LedgerPath())
	retention := s.Usage.RetentionDays
	if retention == 0 {
		retention = 400
	}
	fmt.Fprintf(tw, "usage-retention-days\t%d\n", retention)
	return tw.Flush()
}

// setSetting is `settings set KEY VALUE`.
func (c *CLI) setSetting(args []string) error {
	key, val := args[0], args[1]
	set, err := setterOf(key, val)
	if err != nil {
		return err
	}
	return c.change(func(a *App) (string, error) {
		return fmt.Sprintf("Set %s to %s.", key, val), set(a)
	})
}

// setterOf parses the value of a setting and returns what sets it.
func setterOf(key, val string) (func(a *App) error, error) {
	switch key {
	case "listen":
		return func(a *App) error { return a.SetListen(val) }, nil
	case "strategy":
		return func(a *App) error { return a.SetStrategy(val) }, nil
	case "stale-while-revalidate":
		on, err := strconv.ParseBool(val)
		if err != nil {
			return nil, usagef("stale-while-revalidate takes true or false")
		}
		return func(a *App) error { return a.SetStaleWhileRevalidate(on) }, nil
	case "stale-max-age-ms", "ttl-ms":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s must be a positive number of milliseconds", key)
		}
		d := time.Duration(n) * time.Millisecond
		if key == "ttl-ms" {
			return func(a *App) error { return a.SetCatalogTiming(0, d) }, nil
		}
		return func(a *App) error { return a.SetCatalogTiming(d, 0) }, nil
	case "header-timeout-ms", "first-event-timeout-ms", "stream-idle-timeout-ms":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s must be a number of milliseconds (0 restores the default)", key)
		}
		which := strings.TrimSuffix(key, "-timeout-ms")
		return func(a *App) error { return a.SetTimeout(which, time.Duration(n)*time.Millisecond) }, nil
	case "hold-seconds":
		n, err := strconv.Atoi(val)
		if err != nil || n < -1 || n > 3600 {
			return nil, usagef("hold-seconds must be a number of seconds from -1 (never) to 3600 (0 restores the default, 30)")
		}
		return func(a *App) error { return a.SetHold(n) }, nil
	case "usage-ledger":
		on, err := strconv.ParseBool(val)
		if err != nil {
			return nil, usagef("usage-ledger takes true or false")
		}
		return func(a *App) error { return a.SetUsageLedger(on) }, nil
	case "usage-retention-days":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("usage-retention-days must be a number of days (0 restores the default)")
		}
		return func(a *App) error { return a.SetUsageRetention(n) }, nil
	}
	if s := suggest(key, settingNames()); s != "" {
		return nil, usagef("unknown setting %q (did you mean %q?)", key, s)
	}
	return nil, usagef("unknown setting %q", key)
}

// aliasesCommand is `codexrelay aliases`: model names that stand for other models.
var aliasesCommand = &command{
	name:    "aliases",
	summary: "list the model aliases",
	run:     func(c *CLI, _ []string) error { return c.listAliases() },
	subs: []*command{
		{
			name:    "list",
			summary: "list the model aliases",
			run:     func(c *CLI, _ []string) error { return c.listAliases() },
		},
		{
			name: "set", args: "NAME MODEL [MODEL...]", minArgs: 2, maxArgs: -1,
			summary: "make NAME an alias of the models; they are tried in order",
			run: func(c *CLI, args []string) error {
				return c.change(func(a *App) (string, error) {
					return fmt.Sprintf("Alias %s now names %s.", args[0], strings.Join(args[1:], ", ")), a.SetAlias(args[0], args[1:])
				})
			},
		},
		{
			name: "remove", args: "NAME", minArgs: 1, maxArgs: 1,
			summary: "remove an alias",
			run: func(c *CLI, args []string) error {
				return c.change(func(a *App) (string, error) {
					return fmt.Sprintf("Removed alias %s.", args[0]), a.SetAlias(args[0], nil)
				})
			},
		},
	},
}

// listAliases prints the aliases, one a line, sorted by name.
func (c *CLI) listAliases() error {
	a, err := c.open()
	if err != nil {
		return err
	}
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
}

// localKeyCommand is `codexrelay local-key`: the API key clients must send, if it is on.
var localKeyCommand = &command{
	name: "local-key",
	subs: []*command{
		{
			name:    "on",
			summary: "require a local API key from clients (a new key, shown once)",
			run: func(c *CLI, _ []string) error {
				return c.change(func(a *App) (string, error) {
					key, err := a.SetLocalKey(true)
					return fmt.Sprintf("Local API key on; clients must send it as a bearer token:\n%s", key), err
				})
			},
		},
		{
			name:    "off",
			summary: "let clients in without a key",
			run: func(c *CLI, _ []string) error {
				return c.change(func(a *App) (string, error) {
					_, err := a.SetLocalKey(false)
					return "Local API key off: clients need no key.", err
				})
			},
		},
		{
			name:    "show",
			summary: "print the local API key (it is kept in the keychain)",
			run:     func(c *CLI, _ []string) error { return c.showLocalKey() },
		},
	},
}

// showLocalKey prints the local API key, or that it is off.
func (c *CLI) showLocalKey() error {
	a, err := c.open()
	if err != nil {
		return err
	}
	key, err := a.LocalKey()
	if err != nil {
		return err
	}
	if key == "" {
		fmt.Fprintln(c.Stdout, "local API key is off")
		return nil
	}
	fmt.Fprintln(c.Stdout, key)
	return nil
}

// codexConfigCommand is `codexrelay codex-config`: the provider block that points Codex at
// the relay.
var codexConfigCommand = &command{
	name:    "codex-config",
	usage:   []string{"[--write] [--path FILE]"},
	summary: "print, or merge with a backup, the provider block for ~/.codex/config.toml",
	flags: func(fs *flag.FlagSet) runFunc {
		write := fs.Bool("write", false, "merge the block into the Codex config (a backup is written first)")
		path := fs.String("path", "", "the Codex config `FILE` (default $CODEX_HOME/config.toml or ~/.codex/config.toml)")
		return func(c *CLI, _ []string) error { return c.codexConfig(*write, *path) }
	},
}

// codexConfig prints the provider block, or merges it into the Codex config at path.
func (c *CLI) codexConfig(write bool, path string) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	if !write {
		fmt.Fprint(c.Stdout, a.CodexConfig())
		return nil
	}
	w, err := a.WriteCodexConfig(path)
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

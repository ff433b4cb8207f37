package cli

import (
	"cmp"
	"flag"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/codexrelay/codexrelay/app"
)

// settingsCommand is `codexrelay settings`: show the settings, or change one. Both, and the
// help's list of keys, come from app.SettingsTable.
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

// settingsHelp is the help's table of the keys of `settings set`.
func settingsHelp() string {
	var b strings.Builder
	b.WriteString("Keys:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, st := range app.SettingsTable {
		fmt.Fprintf(tw, "  %s\t%s\n", st.Name, st.Help)
	}
	tw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// showSettings prints the settings in effect, as `settings set` takes them, and the file they
// are kept in.
func (c *CLI) showSettings() error {
	a, err := c.open()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "settings file\t%s\n", a.SettingsPath())
	for _, st := range app.SettingsTable {
		v := st.Show(a)
		if st.Name == app.SettingUsageLedger {
			v += " (" + a.LedgerPath() + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\n", st.Name, v)
	}
	return tw.Flush()
}

// setSetting is `settings set KEY VALUE`. A key or value the table refuses is a usage error;
// a change the app refuses (a port another program holds) is a failure, and saves nothing.
func (c *CLI) setSetting(args []string) error {
	key, val := args[0], args[1]
	st, ok := app.LookupSetting(key)
	if !ok {
		if s := app.Suggest(key, app.SettingNames()); s != "" {
			return usagef("unknown setting %q (did you mean %q?)", key, s)
		}
		return usagef("unknown setting %q: the keys are %s", key, strings.Join(app.SettingNames(), ", "))
	}
	set, err := st.Parse(val)
	if err != nil {
		if fe, ok := err.(*app.FieldError); ok && fe.Field != key {
			return usagef("%s: %v", key, err) // "listen: listen address ..."
		}
		return usagef("%v", err)
	}
	a, err := c.open()
	if err != nil {
		return err
	}
	old := a.Settings()
	if err := set(a); err != nil {
		return fmt.Errorf("%w; %s was not changed", err, key)
	}
	now := a.Settings()
	switch newKey := now.LocalAPIKey && now.LocalKeyID != old.LocalKeyID; {
	case st.Name == app.SettingLocalAPIKey && now.LocalAPIKey && !newKey:
		fmt.Fprintf(c.Stdout, "%s is already %s; the local key is unchanged (`codexrelay local-key on` makes a new one).\n", key, val)
	default:
		fmt.Fprintf(c.Stdout, "Set %s to %s.\n", key, val)
	}
	c.applied(a)
	switch {
	case st.Name == app.SettingListen && a.ListenAddr() != cmp.Or(old.Listen, app.DefaultListen):
		c.codexFollows(a, "the new address", "Codex now points at "+a.ListenAddr())
	case st.Name == app.SettingLocalAPIKey && now.LocalAPIKey && now.LocalKeyID != old.LocalKeyID:
		fmt.Fprintln(c.Stdout, "Clients must send the new local key: `codexrelay local-key show` prints it.")
		c.codexFollows(a, "the new local key", "Codex now sends the new local key")
	}
	return nil
}

// codexFollows gives Codex what changed (the relay's new address, a new local key): it
// rewrites the Codex configuration if Codex selects the relay's block (the one Codex Relay
// wrote), else says how; what is "the new address" or "the new local key", done the sentence
// that says it was given.
func (c *CLI) codexFollows(a *app.App, what, done string) {
	if !a.CodexConfigured().SelectsRelay {
		fmt.Fprintf(c.Stdout, "Codex does not use the relay yet: `codexrelay codex-config --write` points it at the relay with %s.\n", what)
		return
	}
	w, err := a.WriteCodexConfig("")
	if err != nil {
		fmt.Fprintf(c.Stdout, "Codex's configuration still lacks %s and could not be updated: %v. Run `codexrelay codex-config --write` once that is fixed.\n", what, err)
		return
	}
	if w.Change != app.Unchanged {
		fmt.Fprintf(c.Stdout, "Updated %s: %s (the previous file is kept as %s).\n", w.Path, done, w.Backup)
	}
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
				return c.change(func(a *app.App) (string, error) {
					return fmt.Sprintf("Alias %s now names %s.", args[0], strings.Join(args[1:], ", ")), a.SetAlias(args[0], args[1:])
				})
			},
		},
		{
			name: "remove", args: "NAME", minArgs: 1, maxArgs: 1,
			summary: "remove an alias",
			run: func(c *CLI, args []string) error {
				return c.change(func(a *app.App) (string, error) {
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
			summary: "require a local API key from clients (a new key; `local-key show` prints it again)",
			run: func(c *CLI, _ []string) error {
				a, err := c.open()
				if err != nil {
					return err
				}
				key, err := a.SetLocalKey(true)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.Stdout, "Local API key on, a new key; clients must send it as a bearer token:\n%s\n", key)
				c.applied(a)
				c.codexFollows(a, "the new local key", "Codex now sends the new local key")
				return nil
			},
		},
		{
			name:    "off",
			summary: "let clients in without a key",
			run: func(c *CLI, _ []string) error {
				return c.change(func(a *app.App) (string, error) {
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
// the relay, printed, written, or taken out again.
var codexConfigCommand = &command{
	name:    "codex-config",
	usage:   []string{"[--write | --remove] [--path FILE]"},
	summary: "print, or merge with a backup, the provider block for ~/.codex/config.toml; --remove undoes it",
	details: `--write also sets SSL_CERT_FILE (the relay's bundle of trusted authorities) and NO_PROXY (loopback) in
the .env beside config.toml, which Codex and the commands it runs read; each file is backed up first.
--remove restores what was there before the relay: the provider block, model_provider and
chatgpt_base_url in config.toml, SSL_CERT_FILE and NO_PROXY in .env, keeping every other change.
Run it before uninstalling Codex Relay, or Codex stays pointed at a relay that is gone.`,
	flags: func(fs *flag.FlagSet) runFunc {
		write := fs.Bool("write", false, "merge the block into the Codex config and set what Codex needs in its .env (each file is backed up first)")
		remove := fs.Bool("remove", false, "undo --write: take the relay out of the Codex config and its .env (each file is backed up first)")
		path := fs.String("path", "", "the Codex config `FILE` (default $CODEX_HOME/config.toml or ~/.codex/config.toml)")
		return func(c *CLI, _ []string) error {
			if *write && *remove {
				return usagef("codex-config takes --write or --remove, not both")
			}
			if *remove {
				return c.removeCodexConfig(*path)
			}
			return c.codexConfig(*write, *path)
		}
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
	case app.Unchanged:
		if w.Env.Change == app.Unchanged {
			fmt.Fprintf(c.Stdout, "%s already points Codex at the relay; nothing changed.\n", w.Path)
		} else {
			fmt.Fprintf(c.Stdout, "%s already points Codex at the relay.\n", w.Path)
		}
	case app.ConfigCreated:
		fmt.Fprintf(c.Stdout, "Created %s: it points Codex at the relay (model_provider = \"codexrelay\").\n", w.Path)
	default:
		fmt.Fprintf(c.Stdout, "Updated %s: it points Codex at the relay (model_provider = \"codexrelay\"); the previous file is kept as %s.\n", w.Path, w.Backup)
	}
	fmt.Fprintln(c.Stdout, w.Env.Summary(nil))
	if w.Limits != "" {
		fmt.Fprintln(c.Stdout, w.Limits+".")
	}
	if w.Change != app.Unchanged || w.Env.Change != app.Unchanged {
		fmt.Fprintln(c.Stdout, "`codexrelay codex-config --remove` undoes this.")
	}
	return nil
}

// removeCodexConfig takes the relay out of the Codex config at path and its .env, and says
// what it changed.
func (c *CLI) removeCodexConfig(path string) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	r, err := a.RemoveCodexConfig(path)
	if err != nil {
		return err
	}
	for _, l := range r.Lines(nil) {
		fmt.Fprintln(c.Stdout, l)
	}
	if r.Changed() {
		fmt.Fprintln(c.Stdout, "Codex no longer uses the relay; `codexrelay codex-config --write` points it at the relay again.")
	}
	return nil
}

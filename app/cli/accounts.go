package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
)

// accountsCommand is `codexrelay accounts`: the upstream accounts and their keychain entries.
var accountsCommand = &command{
	name: "accounts",
	subs: []*command{
		{
			name:    "list",
			usage:   []string{"[--json]"},
			summary: "accounts and their state (never a secret)",
			flags: func(fs *flag.FlagSet) runFunc {
				asJSON := fs.Bool("json", false, "print JSON")
				return func(c *CLI, _ []string) error { return c.listAccounts(*asJSON) }
			},
		},
		{
			name: "add",
			usage: []string{
				"--name N --kind openai --base-url URL [--api responses|chat]",
				"--kind chatgpt [--name N] [--device]",
			},
			summary: "add an API-key account (the key is read from stdin), or sign in with ChatGPT in the browser (or with a code)",
			tooMany: "unexpected argument after the flags: the API key is read from stdin, never from the command line",
			flags:   addFlags,
			flagOf:  fieldFlags(addFields),
		},
		{
			name:    "import-codex",
			usage:   []string{"[--path FILE]"},
			summary: "import the Codex CLI login (~/.codex/auth.json)",
			flags: func(fs *flag.FlagSet) runFunc {
				path := fs.String("path", "", "the Codex auth.json `FILE` (default $CODEX_HOME/auth.json or ~/.codex/auth.json)")
				return func(c *CLI, _ []string) error { return c.importCodex(*path) }
			},
		},
		{
			name: "rename", args: "OLD NEW", minArgs: 2, maxArgs: 2,
			summary: "rename an account",
			run:     (*CLI).renameAccount,
		},
		{
			name: "remove", args: "NAME", minArgs: 1, maxArgs: 1,
			summary: "remove an account and its keychain entry",
			run:     (*CLI).removeAccount,
		},
		{
			name: "enable", args: "NAME", minArgs: 1, maxArgs: 1,
			summary: "take an account back into rotation",
			run:     func(c *CLI, args []string) error { return c.enableAccount(args[0], true) },
		},
		{
			name: "disable", args: "NAME", minArgs: 1, maxArgs: 1,
			summary: "take an account out of rotation",
			run:     func(c *CLI, args []string) error { return c.enableAccount(args[0], false) },
		},
		{
			name: "move", args: "NAME", minArgs: 1, maxArgs: 1,
			usage:   []string{"NAME --to K"},
			summary: "put account NAME at position K of the priority order (1 is tried first)",
			flags: func(fs *flag.FlagSet) runFunc {
				to := fs.Int("to", 0, "the new position `K`: 1 is tried first")
				return func(c *CLI, args []string) error { return c.moveAccount(args[0], *to) }
			},
			flagOf: fieldFlags(map[string]string{app.FieldPosition: "--to"}),
		},
		{
			name: "set-reserve", args: "NAME PERCENT", minArgs: 2, maxArgs: 2,
			summary: "keep PERCENT of the account's binding window unspent (1-99; 0 clears it): the relay stops choosing it once less is left, until that window resets",
			run:     (*CLI).setReserve,
			flagOf:  fieldFlags(map[string]string{app.FieldReserve: "PERCENT"}),
		},
		{
			name: "set-key", args: "NAME", minArgs: 1, maxArgs: 1,
			summary: "replace the API key of an account; the new key is read from stdin",
			tooMany: "accounts set-key takes only NAME: the API key is read from stdin, never from the command line",
			run:     (*CLI).setKey,
			flagOf:  fieldFlags(map[string]string{app.FieldKey: "the API key on stdin"}),
		},
		{
			name: "redeem", args: "NAME", minArgs: 1, maxArgs: 1,
			usage:   []string{"NAME [--force] [--json]"},
			summary: "spend one of a ChatGPT account's banked resets (the one that expires first)",
			details: fmt.Sprintf(`It redeems only where a reset helps: the account rests at its limit, or a window is %.0f%% used
(a redemption also restarts the weekly window from that moment); --force redeems anyway. The running
relay redeems it (one redemption at a time per account); without one, this command does. A
redemption whose answer was lost is tried again under the same request id, so one intent never
spends two banked resets. The windows are read again afterwards, and it says when nothing was reset.`, app.RedeemWorthAt),
			flags: func(fs *flag.FlagSet) runFunc {
				asJSON := fs.Bool("json", false, "print the result as JSON")
				force := fs.Bool("force", false, "redeem even where the account's windows are far from their limit")
				return func(c *CLI, args []string) error { return c.redeem(args[0], *asJSON, *force) }
			},
		},
		{
			name: "export", args: "FILE", minArgs: 1, maxArgs: 1,
			usage:   []string{"FILE [--disable-chatgpt] [--force]"},
			summary: "write every account, its settings and its secret to FILE, encrypted with a passphrase read from stdin",
			details: fmt.Sprintf(`FILE is an age file (scrypt passphrase recipient), mode 0600; no secret is ever written in clear.
The passphrase needs at least %d characters; an existing FILE is replaced only with --force.
ChatGPT refresh tokens are single-use: once the other machine uses the file, only one of the two
may refresh each sign-in. --disable-chatgpt disables those accounts here after the export.`, app.MinPassphraseLength),
			flags: func(fs *flag.FlagSet) runFunc {
				disable := fs.Bool("disable-chatgpt", false, "disable the exported ChatGPT accounts here")
				force := fs.Bool("force", false, "replace FILE if it exists")
				return func(c *CLI, args []string) error { return c.export(args[0], *disable, *force) }
			},
		},
		{
			name: "import", args: "FILE", minArgs: 1, maxArgs: 1,
			summary: "restore the accounts of an export (passphrase on stdin); accounts that exist here are skipped and named",
			run:     func(c *CLI, args []string) error { return c.importFile(args[0]) },
		},
		{
			name:    "prune",
			usage:   []string{"[--include-unknown]"},
			summary: "remove this folder's keychain entries that no account names (left by an interrupted add)",
			details: `Only entries that name this settings folder are removed. Entries that name no folder (written by
an older version, or the local key's, which every settings folder on the keyring shares) are listed
and left alone, unless --include-unknown is given; entries of another settings folder are never touched.`,
			flags: func(fs *flag.FlagSet) runFunc {
				unknown := fs.Bool("include-unknown", false, "also remove the entries listed as of unknown owner")
				return func(c *CLI, _ []string) error { return c.prune(*unknown) }
			},
		},
	},
}

// addFields names the flags of `accounts add` that give the fields an AddAccount error names.
var addFields = map[string]string{
	app.FieldName: "--name", app.FieldKind: "--kind", app.FieldBaseURL: "--base-url", app.FieldAPI: "--api",
	app.FieldKey: "the API key on stdin",
}

// addFlags declares the flags of `accounts add`.
func addFlags(fs *flag.FlagSet) runFunc {
	var na app.NewAccount
	fs.StringVar(&na.Name, "name", "", "the account's `NAME`")
	fs.StringVar(&na.Kind, "kind", "", "the account's `KIND`: openai (an API key) or chatgpt (a ChatGPT sign-in)")
	fs.StringVar(&na.BaseURL, "base-url", "", "the upstream base `URL`, e.g. https://api.openai.com/v1")
	fs.StringVar(&na.API, "api", "responses", "the wire `API` of an openai account: responses or chat")
	device := fs.Bool("device", false, "chatgpt: sign in with a code on another device (no browser here)")
	return func(c *CLI, _ []string) error { return c.addAccount(na, *device) }
}

// addAccount adds an API-key account with the key on stdin, or signs in with ChatGPT.
func (c *CLI) addAccount(na app.NewAccount, device bool) error {
	if na.Kind == "" || (na.Name == "" && na.Kind != "chatgpt") {
		return usagef("accounts add needs --name and --kind")
	}
	if na.Kind == "chatgpt" {
		return c.signIn(na.Name, na.BaseURL, device)
	}
	if na.Kind != "openai" {
		return usagef("unknown --kind %q: use openai or chatgpt", na.Kind)
	}
	// Every flag is checked before the key is read: a mistake is told at once, not after the
	// user pasted a key.
	if _, err := app.CheckNewAccount(na); err != nil {
		return err
	}
	key, err := c.readKey("accounts add ...")
	if err != nil {
		return err
	}
	return c.change(func(a *app.App) (string, error) {
		m, err := a.AddAccount(na, app.Secret{APIKey: key})
		return fmt.Sprintf("Added account %q (%s, %s API, %s); its key is in the system keychain.", m.Name, m.Kind, m.API, m.BaseURL), err
	})
}

// signIn adds a ChatGPT account by a sign-in in the browser, or with a device code.
func (c *CLI) signIn(name, baseURL string, device bool) error {
	if baseURL != "" {
		return usagef("--base-url is set with CODEXRELAY_CHATGPT_BASE_URL for chatgpt accounts")
	}
	a, err := c.open()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var m app.AccountMeta
	if device {
		m, err = a.SignInChatGPTDevice(ctx, name, func(d app.DeviceCode) {
			fmt.Fprintf(c.Stdout, "On any device, open %s and enter the code %s\nWaiting for the sign-in...\n", d.VerificationURL, d.UserCode)
		})
	} else {
		m, err = a.SignInChatGPT(ctx, name, func(u string) error {
			fmt.Fprintf(c.Stdout, "Opening the ChatGPT sign-in in your browser. If nothing opens, visit:\n%s\n", u)
			return app.OpenBrowser(u)
		})
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "Signed in: account %q (%s); its tokens are in the system keychain.\n", m.Name, m.Email)
	c.applied(a)
	return nil
}

// readKey reads an API key from stdin: the first line, trimmed. usage is the command line
// the advice for an empty stdin shows after the pipe ("accounts add ...").
func (c *CLI) readKey(usage string) (string, error) {
	next, _ := c.stdinLines("the API key")
	line, err := next("API key (not shown as you type): ")
	if err != nil {
		return "", err
	}
	key := strings.TrimSpace(line)
	if key == "" {
		return "", fmt.Errorf("no API key on stdin: pipe it in, e.g. `printenv OPENAI_API_KEY | codexrelay %s`", usage)
	}
	return key, nil
}

// importCodex imports the Codex CLI login from path (or its default place).
func (c *CLI) importCodex(path string) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	m, outcome, err := a.ImportCodex(path)
	if err != nil {
		return err
	}
	switch outcome {
	case app.Unchanged:
		fmt.Fprintf(c.Stdout, "The Codex login is already account %q; nothing changed.\n", m.Name)
		return nil
	case app.Renewed:
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
}

// renameAccount is `accounts rename OLD NEW`.
func (c *CLI) renameAccount(args []string) error {
	return c.change(func(a *app.App) (string, error) {
		return fmt.Sprintf("Renamed account %q to %q.", args[0], args[1]), a.RenameAccount(args[0], args[1])
	})
}

// removeAccount is `accounts remove NAME`.
func (c *CLI) removeAccount(args []string) error {
	return c.change(func(a *app.App) (string, error) {
		return fmt.Sprintf("Removed account %q and its keychain entry.", args[0]), a.RemoveAccount(args[0])
	})
}

// enableAccount is `accounts enable NAME` and `accounts disable NAME`.
func (c *CLI) enableAccount(name string, enabled bool) error {
	return c.change(func(a *app.App) (string, error) {
		if enabled {
			return fmt.Sprintf("Enabled account %q: it takes requests again.", name), a.SetAccountEnabled(name, true)
		}
		return fmt.Sprintf("Disabled account %q: it takes no request until you enable it.", name), a.SetAccountEnabled(name, false)
	})
}

// moveAccount is `accounts move NAME --to K`.
func (c *CLI) moveAccount(name string, to int) error {
	if to == 0 {
		return usagef("accounts move needs --to K")
	}
	if to < 0 {
		return usagef("--to %d: positions start at 1", to)
	}
	return c.change(func(a *app.App) (string, error) {
		n, err := a.MoveAccount(name, to)
		return fmt.Sprintf("Moved account %q to position %d of %d.", name, to, n), err
	})
}

// setReserve is `accounts set-reserve NAME PERCENT`.
func (c *CLI) setReserve(args []string) error {
	name := args[0]
	pct, err := strconv.Atoi(strings.TrimSuffix(args[1], "%"))
	if err != nil {
		return usagef("PERCENT %q is not a whole number: give 1 to %d (percent of the account's binding window), or 0 for none", args[1], app.MaxReserve)
	}
	if err := app.CheckReserve(pct); err != nil {
		return usagef("PERCENT %d is out of range: give 1 to %d (percent of the account's binding window), or 0 for none", pct, app.MaxReserve)
	}
	return c.change(func(a *app.App) (string, error) {
		if pct == 0 {
			return fmt.Sprintf("Account %q keeps no reserve: the relay may spend all of its windows.", name), a.SetAccountReserve(name, 0)
		}
		return fmt.Sprintf("Account %q keeps %d%% in reserve: the relay stops choosing it once its binding window has less left, until that window resets.", name, pct),
			a.SetAccountReserve(name, pct)
	})
}

// setKey is `accounts set-key NAME`: it replaces the account's API key with the one on stdin.
func (c *CLI) setKey(args []string) error {
	key, err := c.readKey("accounts set-key " + args[0])
	if err != nil {
		return err
	}
	return c.change(func(a *app.App) (string, error) {
		return fmt.Sprintf("Replaced the key of account %q; it is in the system keychain.", args[0]), a.SetAPIKey(args[0], key)
	})
}

// prune is `accounts prune`: it lists, then removes, this folder's keychain entries that no
// account names; entries of unknown owner only with --include-unknown.
func (c *CLI) prune(includeUnknown bool) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	own, unknown, err := a.KeychainLeftovers()
	if err != nil {
		return err
	}
	remove := own
	if includeUnknown {
		remove = append(slices.Clone(own), unknown...)
	}
	if len(remove) == 0 {
		fmt.Fprintln(c.Stdout, "Every keychain entry of this settings folder belongs to an account; nothing to remove.")
	} else {
		fmt.Fprintf(c.Stdout, "Removing %d keychain %s that no account names: %s.\n", len(remove), plural(len(remove), "entry", "entries"), strings.Join(remove, ", "))
		removed, err := a.RemoveLeftovers(remove, includeUnknown)
		if err != nil {
			return fmt.Errorf("removed %d of them, then: %w", len(removed), err)
		}
		fmt.Fprintf(c.Stdout, "Removed %d keychain %s.\n", len(removed), plural(len(removed), "entry", "entries"))
	}
	if len(unknown) > 0 && !includeUnknown {
		fmt.Fprintf(c.Stdout, "Left alone %d keychain %s of unknown owner (written by an older version, or another settings folder's): %s. If no other profile uses them, remove them with `codexrelay accounts prune --include-unknown`.\n",
			len(unknown), plural(len(unknown), "entry", "entries"), strings.Join(unknown, ", "))
	}
	return nil
}

// listAccounts is `accounts list`: the accounts, then the keychain entries no account names.
func (c *CLI) listAccounts(asJSON bool) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	if err := c.printAccounts(a, asJSON); err != nil {
		return err
	}
	if orphans, err := a.OrphanSecrets(); err == nil && len(orphans) > 0 && !asJSON {
		fmt.Fprintf(c.Stdout, "\n%d keychain %s of this settings folder %s to no account (left by an interrupted add): `codexrelay accounts prune` lists and removes %s.\n",
			len(orphans), plural(len(orphans), "entry", "entries"), plural(len(orphans), "belongs", "belong"), plural(len(orphans), "it", "them"))
	}
	return nil
}

// accountRow is one account as `accounts list` shows it.
type accountRow struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	API     string `json:"api"`
	BaseURL string `json:"base_url"`
	State   string `json:"state"`
	// CooldownReason says why a cooling account rests (rate_limit, failing, reserve).
	CooldownReason string `json:"cooldown_reason,omitempty"`
	// Reserve is the share of its binding window the relay keeps unspent (percent; 0: none).
	Reserve int          `json:"reserve,omitempty"`
	Email   string       `json:"email,omitempty"`
	Quota   *proxy.Quota `json:"quota,omitempty"`
	// BucketRests are the buckets (a model family's own limit) resting on the account.
	BucketRests []proxy.BucketRest `json:"bucket_rests,omitempty"`
	// ResetCredits are a ChatGPT account's banked resets (absent while unknown, or off).
	ResetCredits *proxy.ResetCredits `json:"reset_credits,omitempty"`
	Error        string              `json:"last_error,omitempty"`
}

// printAccounts prints the accounts with their live state, as a table or as JSON.
func (c *CLI) printAccounts(a *app.App, asJSON bool) error {
	if a.LoadWarning != nil {
		// Its accounts are not known: an empty list (or "no accounts yet") would say otherwise.
		return fmt.Errorf("the accounts cannot be listed: %s cannot be read (see the warning above)", a.SettingsPath())
	}
	stats, live := liveStats(a)
	rows := accountRows(a, stats)
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
	fmt.Fprintln(tw, "#\tNAME\tKIND\tAPI\tSTATE\tRESERVE\t5H USED\tWEEK USED\tRESETS\tBASE URL")
	for i, r := range rows {
		h5, wk := "-", "-"
		if q := r.Quota; q != nil {
			if q.HasPrimary() { // a weekly-only plan has no five hours: "-"
				h5 = pct(q.PrimaryUsedPercent, q.PrimaryResetsAt)
			}
			if q.HasSecondary() {
				wk = pct(q.SecondaryUsedPercent, q.SecondaryResetsAt)
			}
		}
		state, reserve := r.State, "-"
		if r.CooldownReason == reserveReason {
			state = "cooldown (reserve)"
		}
		if r.Reserve > 0 {
			reserve = strconv.Itoa(r.Reserve) + "%"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, r.Name, r.Kind, r.API, state, reserve, h5, wk, resets(r.ResetCredits), r.BaseURL)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if line := strings.Join(app.QuotaExtras(r.Quota, pct), "; "); line != "" {
			fmt.Fprintf(c.Stdout, "%s: %s\n", r.Name, line)
		}
		if line := bucketRests(r.BucketRests); line != "" {
			fmt.Fprintf(c.Stdout, "%s: %s\n", r.Name, line)
		}
	}
	if !live {
		fmt.Fprintln(c.Stdout, "(no Codex Relay is running on "+a.ListenAddr()+": states are as stored; quotas read just now)")
	}
	return nil
}

// accountRows joins the accounts' metadata with their stats, in priority order.
func accountRows(a *app.App, stats []proxy.AccountStats) []accountRow {
	byName := map[string]proxy.AccountStats{}
	for _, s := range stats {
		byName[s.Name] = s
	}
	rows := make([]accountRow, 0, len(a.Accounts()))
	for _, m := range a.Accounts() {
		st := byName[m.Name]
		if st.State == "" {
			st.State = "ready"
			if m.Disabled {
				st.State = "disabled"
			}
		}
		rows = append(rows, accountRow{Name: m.Name, Kind: m.Kind, API: m.API, BaseURL: a.BaseURL(m), State: st.State,
			CooldownReason: st.CooldownReason, Reserve: m.Reserve, Email: m.Email, Quota: st.Quota, BucketRests: st.BucketRests,
			ResetCredits: st.ResetCredits, Error: st.LastError})
	}
	return rows
}

// liveStats asks the Codex Relay running for this settings folder for its account states (a
// signed request: see app.RelayClient); without one, or when what answers is not it, it reads
// the ChatGPT quotas itself.
func liveStats(a *app.App) ([]proxy.AccountStats, bool) {
	if rc, err := a.RunningRelay(time.Second); rc != nil && err == nil {
		if snap, err := rc.Stats(context.Background()); err == nil {
			return snap.Accounts, true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := relay.New(a) // it never listens: it reads the quotas, as a serving one does
	defer r.Close()
	r.Proxy.RefreshQuotas(ctx)
	return r.Proxy.Stats().Accounts, false
}

// resets is the RESETS cell: how many banked resets, and when the first expires.
func resets(rc *proxy.ResetCredits) string {
	switch {
	case rc == nil:
		return "-"
	case rc.Available > 0 && rc.NextExpiresAt != nil:
		return fmt.Sprintf("%d (first expires %s)", rc.Available, rc.NextExpiresAt.Local().Format("Jan 2 15:04"))
	}
	return strconv.Itoa(rc.Available)
}

// redeem is `accounts redeem NAME`.
func (c *CLI) redeem(name string, asJSON, force bool) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	var before *proxy.Quota
	if m, ok := accountNamed(a, name); ok && m.Kind == string(proxy.KindChatGPT) {
		stats, _ := liveStats(a)
		for _, st := range stats {
			if st.Name != name {
				continue
			}
			before = st.Quota
			if helps, why := app.RedeemHelps(st); !helps && !force {
				return fmt.Errorf("not redeemed: a banked reset of %q would give back little now: %s (a redemption also restarts the weekly window); --force redeems anyway", name, why)
			}
		}
	}
	res, err := relay.RedeemCredit(a, name)
	switch {
	case errors.Is(err, proxy.ErrRedeemPending):
		return fmt.Errorf("%w; run the command again: it repeats the same request, so it spends at most one banked reset", err)
	case err != nil:
		return err
	}
	if asJSON {
		enc := json.NewEncoder(c.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(c.Stdout, "Redeemed a banked reset of account %q (%s): %d %s reset.\n", name, res.Code, res.WindowsReset,
		plural(res.WindowsReset, "window", "windows"))
	if q := res.Quota; q != nil {
		fmt.Fprintf(c.Stdout, "Read again: the five-hour window is %.0f%% used, the weekly one %.0f%%.\n", q.PrimaryUsedPercent, q.SecondaryUsedPercent)
	}
	if nothingReset(res, before) {
		fmt.Fprintln(c.Stdout, "Nothing was reset: the backend took the banked reset, but the windows are as they were (this has happened upstream; the banked reset may come back, or ask OpenAI's support).")
	}
	if rc := res.Remaining; rc != nil {
		fmt.Fprintf(c.Stdout, "%d %s left.\n", rc.Available, plural(rc.Available, "banked reset", "banked resets"))
	}
	return nil
}

// nothingReset says whether a redemption reset nothing: the backend says no window was reset,
// or the windows read again are not lower than before it.
func nothingReset(res proxy.RedeemResult, before *proxy.Quota) bool {
	if res.WindowsReset == 0 {
		return true
	}
	after := res.Quota
	return before != nil && after != nil && after.PrimaryUsedPercent >= before.PrimaryUsedPercent &&
		after.SecondaryUsedPercent >= before.SecondaryUsedPercent && before.PrimaryUsedPercent+before.SecondaryUsedPercent > 0
}

// accountNamed is the account called name, if there is one.
func accountNamed(a *app.App, name string) (app.AccountMeta, bool) {
	for _, m := range a.Accounts() {
		if m.Name == name {
			return m, true
		}
	}
	return app.AccountMeta{}, false
}

// stdinLines reads stdin a line at a time (64 KiB in all at most), each without its line end;
// what names the input in an error. At a terminal, next shows its prompt first and reads the
// line without echoing it (a secret never shows on the screen, as in the windows' masked fields).
func (c *CLI) stdinLines(what string) (next func(prompt string) (string, error), terminal bool) {
	if f, ok := c.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return func(prompt string) (string, error) {
			fmt.Fprint(c.Stderr, prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.Stderr) // the line end typed was not echoed either
			if err != nil {
				return "", fmt.Errorf("cannot read %s from the terminal: %w", what, err)
			}
			if len(b) > 64<<10 {
				return "", fmt.Errorf("%s is longer than 64 KiB", what)
			}
			return strings.TrimRight(string(b), "\r\n"), nil
		}, true
	}
	r := bufio.NewReader(io.LimitReader(c.Stdin, 64<<10))
	return func(string) (string, error) {
		s, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("cannot read %s from stdin: %w", what, err)
		}
		return strings.TrimRight(s, "\r\n"), nil
	}, false
}

// readPassphrase reads a backup's passphrase from stdin: the first line, without its line end.
// Typed at a terminal, it is asked for twice when confirm is set (an export: a typo would make a
// file nobody can open).
func (c *CLI) readPassphrase(command string, confirm bool) (string, error) {
	next, terminal := c.stdinLines("the passphrase")
	p, err := next("Passphrase (not shown as you type): ")
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", fmt.Errorf("no passphrase on stdin: pipe it in, e.g. `printf '%%s\\n' \"$PASSPHRASE\" | codexrelay %s`", command)
	}
	if terminal && confirm {
		again, err := next("The same passphrase again: ")
		if err != nil {
			return "", err
		}
		if again != p {
			return "", errors.New("the two passphrases differ: nothing was written")
		}
	}
	return p, nil
}

// export is `accounts export FILE`. Where it would write is checked before the passphrase is
// asked for.
func (c *CLI) export(path string, disable, force bool) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	if err := app.CheckExportTarget(path, force); errors.Is(err, app.ErrExportExists) {
		return fmt.Errorf("%s already exists: add --force to replace it, or choose another name", path)
	} else if err != nil {
		return err
	}
	pass, err := c.readPassphrase("accounts export "+path, true)
	if err != nil {
		return err
	}
	res, err := a.ExportAccountsFile(path, pass, force)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "Exported %d %s to %s (encrypted with the passphrase, readable by you alone): %s.\n",
		len(res.Accounts), plural(len(res.Accounts), "account", "accounts"), path, strings.Join(res.Accounts, ", "))
	for _, s := range res.Skipped {
		fmt.Fprintf(c.Stdout, "Left out %q: %s.\n", s.Name, s.Reason)
	}
	if len(res.ChatGPT) == 0 {
		return nil
	}
	if disable {
		if err := a.DisableAccounts(res.ChatGPT); err != nil {
			return fmt.Errorf("the export is written, but the ChatGPT accounts could not be disabled here: %w", err)
		}
		fmt.Fprintf(c.Stdout, "Disabled here: %s (their refresh tokens are single-use: the other machine refreshes them now).\n", strings.Join(res.ChatGPT, ", "))
		c.applied(a)
		return nil
	}
	fmt.Fprintf(c.Stdout, "ChatGPT refresh tokens are single-use: once the other machine serves %s, disable %s here (`codexrelay accounts disable NAME`, or export again with --disable-chatgpt), or the two machines log each other out.\n",
		strings.Join(res.ChatGPT, ", "), plural(len(res.ChatGPT), "it", "them"))
	return nil
}

// importFile is `accounts import FILE`.
func (c *CLI) importFile(path string) error {
	a, err := c.open()
	if err != nil {
		return err
	}
	pass, err := c.readPassphrase("accounts import "+path, false)
	if err != nil {
		return err
	}
	res, err := a.ImportAccountsFile(path, pass)
	if err != nil {
		return err
	}
	if len(res.Imported) == 0 {
		fmt.Fprintln(c.Stdout, "Imported no account.")
	} else {
		fmt.Fprintf(c.Stdout, "Imported %d %s: %s; their secrets are in the system keychain.\n",
			len(res.Imported), plural(len(res.Imported), "account", "accounts"), strings.Join(res.Imported, ", "))
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(c.Stdout, "Skipped %q: %s.\n", s.Name, s.Reason)
	}
	if len(res.ChatGPT) > 0 {
		fmt.Fprintf(c.Stdout, "%s %s ChatGPT %s: disable %s on the other machine, whose refresh tokens are now this one's too.\n",
			strings.Join(res.ChatGPT, ", "), plural(len(res.ChatGPT), "is a", "are"), plural(len(res.ChatGPT), "sign-in", "sign-ins"), plural(len(res.ChatGPT), "it", "them"))
	}
	if len(res.Imported) > 0 {
		c.applied(a)
	}
	return nil
}

// reserveReason is the cooldown reason of an account held back for its reserve.
const reserveReason = app.CooldownReserve

// bucketRests is an account's resting buckets in one line: "Spark resting until Jan 2 15:10".
func bucketRests(rests []proxy.BucketRest) string {
	return strings.Join(app.BucketRests(rests, func(t time.Time) string { return t.Local().Format("Jan 2 15:04") }), "; ")
}

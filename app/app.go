package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/adrg/xdg"

	"github.com/codexrelay/codexrelay/proxy"
)

// Options configure an App. Zero values mean the real environment.
type Options struct {
	ConfigDir string   // default $XDG_CONFIG_HOME/codexrelay
	Keychain  Keychain // default service "codexrelay"
	Logger    *slog.Logger
	Getenv    func(string) string
	Now       func() time.Time
	// Transport sends the proxy's upstream and the sign-in requests (default: the real network).
	Transport http.RoundTripper
	// CallbackAddr is where the browser sign-in returns (default 127.0.0.1:1455).
	CallbackAddr string
	// PollInterval overrides the device sign-in's polling interval (tests).
	PollInterval time.Duration
	// AutostartDir is where the XDG autostart entry goes (default $XDG_CONFIG_HOME/autostart).
	AutostartDir string
	// DataDir is where the usage ledger lives (default: the settings folder when ConfigDir
	// was given, else $XDG_DATA_HOME/codexrelay).
	DataDir string
}

// App is a settings folder's store: the settings file, the keychain entries of its accounts
// and local key, the Codex home it configures, and where its usage ledger lives. Every program
// opens one (the command line, the window process, the tray); a program that serves also makes
// the running relay over it (app/relay), which follows what the store applies (Follow). Its
// methods are safe for concurrent use.
//
// The settings file and the keychain are the one source of truth. Every change takes the
// settings lock (shared by every Codex Relay process), reads the file again, applies its one
// change, writes the file atomically and lets the lock go; then this process applies what the
// file now says, as it does when Watch sees another process change it. No process ever saves
// its own copy of the settings over the file.
type App struct {
	opt Options
	log *slog.Logger
	// LoadWarning is set when the settings file was corrupt: kept aside by the relay's own
	// start, left in place by any other command.
	LoadWarning error

	writeMu sync.Mutex // one change at a time in this process; the file lock orders processes
	applyMu sync.Mutex // one reload at a time: read the file, apply it

	tls loopbackTLS // the TLS configuration of the relay's port (loopca.go)

	mu        sync.Mutex
	settings  Settings                 // as last applied
	creds     map[string]*accountCreds // by account ID
	reloadErr error                    // why the file could not be followed; nil while it is
	onReload  []func()                 // called after each reload (OnReload)
	// followers are told what each applied settings file changed (Follow): the running relay
	// this process made over the store (app/relay), if any. The store knows them only so.
	followers []*follower

	// freshKeyID is the local key a change of this process turned on as it created the
	// settings file; freshKeyErr why it could not (localkey.go).
	freshKeyID  string
	freshKeyErr error
	// userAgent is what the sign-in sends (oauth.go): the build's own, or the one a follower
	// gives (UserAgentFrom).
	userAgent   string
	userAgentOf func() string

	pendingMu sync.Mutex // redeem-pending.json (credits.go)
}

// errNoChange is a change that finds nothing to do: update writes nothing and reports no error.
var errNoChange = errors.New("nothing to change")

// DefaultConfigDir is where the settings file lives.
func DefaultConfigDir() string { return filepath.Join(xdg.ConfigHome, "codexrelay") }

// Open loads a settings folder's store. It builds no relay (app/relay does, over it). Secrets
// are read from the keychain lazily, on an account's first request.
func Open(opt Options) (*App, error) {
	if opt.ConfigDir == "" {
		opt.ConfigDir = DefaultConfigDir()
	}
	opt.Keychain.Folder = folderKey(opt.ConfigDir) // the entries it writes name their folder
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	a := &App{opt: opt, log: opt.Logger, creds: map[string]*accountCreds{}}
	s, err := loadSettings(opt.ConfigDir, opt.Now())
	if errors.Is(err, ErrCorruptSettings) {
		a.LoadWarning = err
		a.log.Error("settings file was corrupt", "error", err)
	} else if err != nil {
		return nil, err
	}
	catOpt, err := catalogOptions(s, opt.Getenv)
	if err != nil {
		return nil, err
	}
	a.userAgent = proxy.UserAgentFor(catOpt.ClientVersion)
	if problems := a.apply(s); len(problems) > 0 {
		// %v: a field the file holds is not the command line's mistake.
		return nil, fmt.Errorf("settings: %v", problems[0])
	}
	return a, nil
}

// Log is the app's structured logger.
func (a *App) Log() *slog.Logger { return a.log }

// Now is the store's clock (Options.Now).
func (a *App) Now() time.Time { return a.opt.Now() }

// Transport is what sends the upstream requests (Options.Transport; nil: the real network).
func (a *App) Transport() http.RoundTripper { return a.opt.Transport }

// CatalogOptions are the model catalog's options as the catalog settings c and the
// environment give them (MODELS_*, which wins); an environment value that is not valid is left
// out (Open refuses it).
func (a *App) CatalogOptions(c CatalogSettings) proxy.CatalogOptions {
	o, err := catalogOptions(Settings{Catalog: c}, a.opt.Getenv)
	if err != nil {
		o, _ = catalogOptions(Settings{Catalog: c}, func(string) string { return "" })
	}
	return o
}

// ConfigDir is the folder of the settings file.
func (a *App) ConfigDir() string { return a.opt.ConfigDir }

// SettingsPath is the settings file.
func (a *App) SettingsPath() string { return filepath.Join(a.opt.ConfigDir, settingsName) }

// Settings returns a copy of the settings this process follows.
func (a *App) Settings() Settings {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.settings
	s.Accounts = slices.Clone(s.Accounts)
	return s
}

// ReloadError says why the settings file could not be followed (for example a hand edit that
// is not valid JSON): the relay keeps the last good settings meanwhile. nil when all is well.
func (a *App) ReloadError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reloadErr
}

// ListenAddr is where the proxy listens: CODEXRELAY_LISTEN, else the setting, else the default.
func (a *App) ListenAddr() string {
	if v := a.ListenPinned(); v != "" {
		return v
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.settings.Listen != "" {
		return a.settings.Listen
	}
	return DefaultListen
}

// ListenPinned is the listen address the environment fixes (CODEXRELAY_LISTEN), or "".
func (a *App) ListenPinned() string { return a.opt.Getenv("CODEXRELAY_LISTEN") }

// OnReload registers f to be called (on the reloading goroutine) after each reload of the
// settings file, whether it applied new settings or found the file unreadable: a window that
// shows the settings reads them again then, rather than polling.
func (a *App) OnReload(f func()) {
	a.mu.Lock()
	a.onReload = append(a.onReload, f)
	a.mu.Unlock()
}

// reloaded runs the OnReload hooks.
func (a *App) reloaded() {
	a.mu.Lock()
	hooks := slices.Clone(a.onReload)
	a.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

// update makes one change to the settings file under the settings lock: it reads the file
// again, applies change to what it read, writes the result with the next generation, lets the
// lock go and then applies the file to this process. change may use the keychain: it runs
// under the lock, so no other process adds or removes an account meanwhile. A change that
// returns an error writes nothing (errNoChange: nothing to do, not an error). The change that
// creates the file turns the local key on first (freshInstallKey), whatever it changes, and
// writes the file even when it has nothing else to do.
func (a *App) update(change func(*Settings) error) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	unlock, err := lockFile(filepath.Join(a.opt.ConfigDir, settingsLockName), lockWait)
	if err != nil {
		return err
	}
	cur, err := readSettingsFile(a.SettingsPath())
	fresh := errors.Is(err, errSettingsMissing)
	if fresh {
		cur, err = Settings{}, nil
	}
	if err != nil {
		unlock()
		if errors.Is(err, ErrCorruptSettings) {
			return fmt.Errorf("%w; fix it (or move it away) and try again: Codex Relay does not overwrite it", err)
		}
		return err
	}
	next := cur
	next.Accounts = slices.Clone(cur.Accounts)
	if fresh {
		a.freshInstallKey(&next) // this write creates the file: a new install
		// A new install spends first the quota that expires first: over a simulated week it
		// served more than priority (`codexrelay bench pool`, docs/performance.md). A folder
		// made before keeps what it had (no strategy written: priority).
		next.Strategy = proxy.StrategyResetFirst
	}
	switch err := change(&next); {
	case errors.Is(err, errNoChange) && fresh:
		// Nothing for the change to do, but the file is new: it is written, with the key.
	case errors.Is(err, errNoChange):
		unlock()
		return nil
	case err != nil:
		unlock()
		if fresh && next.LocalKeyID != "" {
			a.dropLocalKey(next.LocalKeyID) // nothing was written: nothing names the new key
		}
		return err
	}
	next.Generation = cur.Generation + 1
	err = saveSettings(a.opt.ConfigDir, next)
	unlock()
	if err != nil {
		return err
	}
	a.Reload()
	return nil
}

// Reload reads the settings file and applies what changed: the store's own state (the
// accounts' credentials), then each follower's (the running relay's proxy and listener, see
// Follow). A file that cannot be read is reported (ReloadError) and the last good settings
// stay in force. The OnReload hooks run last, after the apply lock is let go.
func (a *App) Reload() {
	a.applyMu.Lock()
	next, err := a.followSettings()
	if err != nil {
		a.mu.Lock()
		changed := fmt.Sprint(a.reloadErr) != fmt.Sprint(err)
		a.reloadErr = err
		a.mu.Unlock()
		a.applyMu.Unlock()
		if changed {
			a.log.Error("the settings file cannot be followed; the last good settings stay in force", "error", err)
			a.reloaded()
		}
		return
	}
	defer a.reloaded() // after applyMu is let go
	defer a.applyMu.Unlock()
	for _, err := range a.apply(next) {
		a.log.Error("settings: a part of the file is ignored", "error", err)
	}
}

// apply makes next the settings in force (applyMu held), hands each follower what changed,
// and returns the parts they could not apply (a reload logs them and keeps the rest; Open,
// which applies the file through here from the zero settings, refuses it).
func (a *App) apply(next Settings) (problems []error) {
	a.mu.Lock()
	prev := a.settings
	a.settings = next
	a.reloadErr = nil
	followers := slices.Clone(a.followers)
	a.mu.Unlock()
	c := Change{Prev: prev, Next: next}
	if !slices.Equal(prev.Accounts, next.Accounts) {
		c.Accounts, c.Renewed = a.setAccounts(next.Accounts)
	}
	for _, f := range followers {
		problems = append(problems, f.follow(c)...)
	}
	if next.Generation != prev.Generation || !reflect.DeepEqual(prev, next) {
		a.log.Debug("settings applied", "generation", next.Generation)
	}
	return problems
}

// A Change is what one applied settings file changed, as the store hands it to its followers.
type Change struct {
	Prev, Next Settings
	// Accounts are Next's accounts as a relay serves them, with their credentials, when the
	// list changed (nil: it did not); Renewed are the IDs of those whose secret was replaced
	// (a relay clears their cooldown and sign-in state).
	Accounts []proxy.Account
	Renewed  []string
}

type follower struct{ follow func(Change) []error }

// Follow has f follow the settings this store applies: at once with what is in force (a
// Change from the zero settings, with every account), then with each settings file a change
// or a reload applies, one at a time and in order, under the store's apply lock (f must not
// change the settings). f returns the parts it could not apply: a reload logs them. stop ends
// the following. The running relay (app/relay) is the store's one follower; the store knows
// no more of it.
func (a *App) Follow(f func(Change) []error) (stop func()) {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	cur := a.Settings()
	accounts, _ := a.setAccounts(cur.Accounts)
	f(Change{Next: cur, Accounts: accounts}) // as Open applied it: the file's problems were Open's
	fl := &follower{f}
	a.mu.Lock()
	a.followers = append(a.followers, fl)
	a.mu.Unlock()
	return func() {
		a.applyMu.Lock()
		defer a.applyMu.Unlock()
		a.mu.Lock()
		a.followers = slices.DeleteFunc(a.followers, func(x *follower) bool { return x == fl })
		a.mu.Unlock()
	}
}

// catalogStats is the catalog's timing as the settings and the environment give it (what
// `codexrelay settings` and the settings window show).
func (a *App) catalogStats() proxy.CatalogStats {
	o, _ := catalogOptions(a.Settings(), a.opt.Getenv)
	return proxy.CatalogStats{SWREnabled: o.StaleWhileRevalidate, StaleMaxAgeMs: o.StaleMaxAge.Milliseconds(), TTLMs: o.TTL.Milliseconds()}
}

// setAccounts keeps the credentials of the accounts metas lists, per account ID, and returns
// the accounts as a relay serves them: those of removed accounts are dropped, and those whose
// secret was replaced (SecretRev) read the keychain again (renewed: a relay clears their
// cooldown and sign-in state).
func (a *App) setAccounts(metas []AccountMeta) (accounts []proxy.Account, renewed []string) {
	a.mu.Lock()
	accounts = make([]proxy.Account, 0, len(metas))
	keep := make(map[string]bool, len(metas))
	for _, m := range metas {
		keep[m.ID] = true
		c := a.creds[m.ID]
		switch {
		case c == nil:
			c = &accountCreds{app: a, id: m.ID, kind: proxy.Kind(m.Kind), rev: m.SecretRev}
			a.creds[m.ID] = c
		case c.kind != proxy.Kind(m.Kind):
			c = &accountCreds{app: a, id: m.ID, kind: proxy.Kind(m.Kind), rev: m.SecretRev}
			a.creds[m.ID] = c
		case c.renew(m.SecretRev):
			renewed = append(renewed, m.ID)
		}
		accounts = append(accounts, proxy.Account{
			ID: m.ID, Name: m.Name, Kind: proxy.Kind(m.Kind), BaseURL: a.BaseURL(m), API: proxy.API(m.API),
			Disabled: m.Disabled, Reserve: min(max(m.Reserve, 0), MaxReserve), Credentials: c,
		})
	}
	for id := range a.creds {
		if !keep[id] {
			delete(a.creds, id)
		}
	}
	a.mu.Unlock()
	return accounts, renewed
}

// BaseURL is the upstream base URL an account is served from: its own, or its kind's default.
func (a *App) BaseURL(m AccountMeta) string {
	if m.BaseURL != "" {
		return m.BaseURL
	}
	if m.Kind == string(proxy.KindChatGPT) {
		if v := a.opt.Getenv("CODEXRELAY_CHATGPT_BASE_URL"); v != "" {
			return v
		}
		return proxy.DefaultChatGPTBaseURL
	}
	return ""
}

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
// the running relay over it (NewRelay), which follows what the store applies. Its methods are
// safe for concurrent use.
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
	onListen  []func()                 // called after a reload changed the listen address
	onReload  []func()                 // called after each reload (OnReload)
	// relay is the running relay this process made over the store (NewRelay), which follows
	// each applied settings file; nil in a program that serves nothing.
	relay *Relay

	localKeyErr error // why the local key that is on cannot be read (applyLocalKey); nil when all is well
	// freshKeyID is the local key a change of this process turned on as it created the
	// settings file; freshKeyErr why it could not (localkey.go).
	freshKeyID  string
	freshKeyErr error
	// userAgent is what the sign-in sends when no relay runs here.
	userAgent string
}

// errNoChange is a change that finds nothing to do: update writes nothing and reports no error.
var errNoChange = errors.New("nothing to change")

// DefaultConfigDir is where the settings file lives.
func DefaultConfigDir() string { return filepath.Join(xdg.ConfigHome, "codexrelay") }

// Open loads a settings folder's store. It builds no relay (NewRelay does). Secrets are read
// from the keychain lazily, on an account's first request.
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
	if _, problems := a.apply(s); len(problems) > 0 {
		// %v: a field the file holds is not the command line's mistake.
		return nil, fmt.Errorf("settings: %v", problems[0])
	}
	return a, nil
}

// Log is the app's structured logger.
func (a *App) Log() *slog.Logger { return a.log }

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

// OnListenChange registers f to be called (on the reloading goroutine) after the listen
// setting changed.
func (a *App) OnListenChange(f func()) {
	a.mu.Lock()
	a.onListen = append(a.onListen, f)
	a.mu.Unlock()
}

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

// Reload reads the settings file and applies what changed to the running proxy: accounts
// (added, removed, renamed, enabled, disabled, moved, a replaced secret), the local key, the
// strategy, the aliases and the catalog settings; the listen address is handed to whoever
// serves (OnListenChange). A file that cannot be read is reported (ReloadError) and the last
// good settings stay in force. In-flight requests are not disturbed. The hooks run before the
// proxy reports the new generation, and never wait for a drain.
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
	moved, problems := a.apply(next)
	for _, err := range problems {
		a.log.Error("settings: a part of the file is ignored", "error", err)
	}
	if moved {
		a.mu.Lock()
		hooks := slices.Clone(a.onListen)
		a.mu.Unlock()
		for _, f := range hooks {
			f()
		}
	}
	// Last: a program waiting for this generation on /health finds everything applied.
	if r := a.runningRelay(); r != nil {
		r.Proxy.SetSettingsGeneration(next.Generation)
	}
}

// runningRelay is the relay this process runs over the store, or nil.
func (a *App) runningRelay() *Relay {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.relay
}

// apply makes next the settings in force (applyMu held) and reports whether the listen
// address changed, and the parts it could not apply (a reload logs them and keeps the rest;
// Open refuses the file). Each part is applied only when it changed, so that an unrelated
// change does not, say, invalidate the model catalog. Open applies a file through here too,
// from the zero settings.
func (a *App) apply(next Settings) (listenMoved bool, problems []error) {
	a.mu.Lock()
	prev := a.settings
	a.settings = next
	a.reloadErr = nil
	r := a.relay
	a.mu.Unlock()
	var accounts []proxy.Account
	var renewed []string
	if !slices.Equal(prev.Accounts, next.Accounts) {
		accounts, renewed = a.setAccounts(next.Accounts)
	}
	if r != nil {
		problems = r.follow(prev, next, accounts, renewed)
	}
	if next.Generation != prev.Generation || !reflect.DeepEqual(prev, next) {
		a.log.Debug("settings applied", "generation", next.Generation)
	}
	return prev.Listen != next.Listen, problems
}

// follow applies to the proxy what changed from prev to next (the store's apply, under its
// applyMu; NewRelay from the zero settings): accounts are the new account list with their
// credentials (nil: unchanged), renewed those whose secret was replaced.
func (r *Relay) follow(prev, next Settings, accounts []proxy.Account, renewed []string) (problems []error) {
	if !sameCatalog(prev.Catalog, next.Catalog) {
		r.applyCatalog(prev.Catalog, next)
	}
	if next.Timeouts != prev.Timeouts {
		r.Proxy.SetTimeouts(next.Timeouts.proxy())
	}
	if next.HoldSeconds != prev.HoldSeconds {
		r.Proxy.SetHold(next.Hold())
	}
	if next.Strategy != prev.Strategy {
		if err := checkFileSetting(SettingStrategy, next.Strategy); err != nil {
			problems = append(problems, err)
		} else {
			r.Proxy.SetStrategy(next.Strategy)
		}
	}
	if !reflect.DeepEqual(prev.Aliases, next.Aliases) {
		if err := r.Proxy.SetAliases(next.Aliases); err != nil {
			problems = append(problems, fmt.Errorf("%w (fix the aliases in %s)", err, r.SettingsPath()))
		}
	}
	if prev.LocalAPIKey != next.LocalAPIKey || prev.LocalKeyRev != next.LocalKeyRev || prev.LocalKeyID != next.LocalKeyID {
		if err := r.applyLocalKey(next); err != nil && prev.Generation != 0 {
			problems = append(problems, err) // a reload logs it; Open reports it as LocalKeyError
		}
	}
	if accounts != nil {
		r.Proxy.SetAccounts(accounts)
		for _, id := range renewed {
			r.Proxy.ResetAccount(id)
		}
	}
	r.applyUsage(prev.Usage, next.Usage)
	problems = append(problems, r.applyResetCredits(prev, next)...)
	return problems
}

func sameCatalog(a, b CatalogSettings) bool {
	return a.StaleMaxAgeMs == b.StaleMaxAgeMs && a.TTLMs == b.TTLMs && equalBoolPtr(a.StaleWhileRevalidate, b.StaleWhileRevalidate)
}

func equalBoolPtr(a, b *bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// catalogStats is the catalog's timing in force: the relay's, when this process runs one (the
// environment's overrides included); else what a relay that starts now takes.
func (a *App) catalogStats() proxy.CatalogStats {
	if r := a.runningRelay(); r != nil {
		return r.Proxy.Stats().Catalog
	}
	o, _ := catalogOptions(a.Settings(), a.opt.Getenv)
	return proxy.CatalogStats{SWREnabled: o.StaleWhileRevalidate, StaleMaxAgeMs: o.StaleMaxAge.Milliseconds(), TTLMs: o.TTL.Milliseconds()}
}

// applyCatalog applies the catalog settings that changed. A setting the file sets wins over
// the environment (which only gives the values a start begins with); one the file no longer
// sets falls back to the environment or the default.
func (r *Relay) applyCatalog(prev CatalogSettings, next Settings) {
	def, err := catalogOptions(Settings{Catalog: next.Catalog}, r.opt.Getenv)
	if err != nil {
		def, _ = catalogOptions(Settings{Catalog: next.Catalog}, func(string) string { return "" })
	}
	c := r.Proxy.Stats().Catalog
	swr, staleMax, ttl := c.SWREnabled, time.Duration(c.StaleMaxAgeMs)*time.Millisecond, time.Duration(0)
	n := next.Catalog
	if !equalBoolPtr(prev.StaleWhileRevalidate, n.StaleWhileRevalidate) {
		swr = def.StaleWhileRevalidate
		if n.StaleWhileRevalidate != nil {
			swr = *n.StaleWhileRevalidate
		}
	}
	if prev.StaleMaxAgeMs != n.StaleMaxAgeMs {
		staleMax = def.StaleMaxAge
		if n.StaleMaxAgeMs > 0 {
			staleMax = time.Duration(n.StaleMaxAgeMs) * time.Millisecond
		}
	}
	if prev.TTLMs != n.TTLMs {
		ttl = def.TTL
		if n.TTLMs > 0 {
			ttl = time.Duration(n.TTLMs) * time.Millisecond
		}
	}
	r.Proxy.SetCatalogOptions(swr, staleMax, ttl)
}

// applyLocalKey reads the local key from the keychain and makes the proxy require it. A key
// that is on but cannot be read locks clients out rather than letting them in without it, and
// is reported by LocalKeyError until it is read again (or turned off, or made anew).
func (r *Relay) applyLocalKey(next Settings) error {
	key, err := r.readLocalKey(next)
	r.mu.Lock()
	r.localKeyErr = err
	r.mu.Unlock()
	switch {
	case err != nil:
		r.Proxy.SetLocalAPIKey("unreadable-" + newID() + newID()) // matches no client
		return err
	default:
		r.Proxy.SetLocalAPIKey(key) // "" when off
		return nil
	}
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
			Disabled: m.Disabled, Credentials: c,
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

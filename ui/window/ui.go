// Package window is Codex Relay's window process (`codexrelay window NAME`: RunWindows): the
// windows (the dashboard, first run, accounts, settings, usage) as a Fyne app, which the tray
// process (ui/tray) starts on demand and which ends when its last window closes. It reads the
// relay's live state from the tray process over loopback (windowClient, the window API) and
// acts through app methods, as the CLI does; it never imports the tray process's package.
// What both processes show is ui/look's, what both read of the relay ui/source's.
//
// UI is the windows' side: a thin client that reads the proxy's state only as a snapshot
// (Stats and Traces, read off the UI thread when the relay changes while a window is open:
// poll).
package window

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
)

// UI ties the windows to one app and its listener.
type UI struct {
	fa    fyne.App
	store *app.App // the settings folder's store (the relay it shows is the tray's, or svc's)
	// svc is an in-process listener (tests, screenshots); ctl is what the windows ask of the
	// listener: svc, or the tray process through the window API.
	svc *relay.Service
	ctl source.RelayControl
	log *slog.Logger
	src source.Source
	now func() time.Time
	// async runs a slow app call (keychain, listener restart, drain) off the UI thread; its
	// result comes back with fyne.Do. Tests run it inline.
	async func(func())
	// poke asks the poller for an early tick after an action.
	poke chan struct{}

	last view
	// orphans are the keychain entries no account names, read at start and after a prune.
	orphansMu sync.Mutex
	orphans   []string

	dash     *Dashboard
	dashWin  fyne.Window
	settings *settingsWindow
	accounts *accountsWindow
	// dashShown says whether the dashboard window is open: a hidden one is not kept up to
	// date (it is brought up to date when it opens), which keeps an idle tray app quiet.
	dashShown bool
	usageWin  *usageScreen
	// shown are the windows open now; lastClosed, when set, is called when the last one
	// closes (the window process then ends).
	shown      map[fyne.Window]bool
	lastClosed func()
	// placed are the windows shown once: each is centred on the screen the first time (they
	// opened at the screen's corner, partly off it), then stays where the user puts it.
	placed map[fyne.Window]bool
	center func(fyne.Window)

	// usage is what the Usage window reads (the relay's ledger, the tray's through the window
	// API, or a fixed source: ShowFixedUsage).
	usageMu sync.Mutex
	usage   source.UsageSource
	// pace keeps the pool's forecast for the dashboard, read on the usage line's cadence.
	pace source.Pace
	// elapsed is the clock that spaces the ledger's reads (time.Now; tests move it by hand).
	elapsed func() time.Time
	// codex caches what the Codex home's config.toml and auth.json say.
	codex *app.CodexFiles
	// fixed, when set, is a status shown instead of the listener's (ShowFixed).
	fixed *app.ServiceStatus
	// redeem spends a banked reset where the relay runs: the tray's (relay.RedeemCredit over the
	// store), or the one of this process (NewWithRelay).
	redeem func(name string) (proxy.RedeemResult, error)
}

// New builds the UI over a settings folder's store on the Fyne app fa without starting
// anything. It shows no relay until it is given one: the tray's over the window API
// (newWindowsUI), or one of this process (NewWithRelay).
func New(fa fyne.App, store *app.App, log *slog.Logger) *UI {
	u := &UI{
		fa: fa, store: store, log: log,
		now:     time.Now,
		elapsed: time.Now,
		async:   func(f func()) { go f() },
		poke:    make(chan struct{}, 1),
		codex:   store.NewCodexFiles(),
		redeem:  func(name string) (proxy.RedeemResult, error) { return relay.RedeemCredit(store, name) },
		shown:   map[fyne.Window]bool{},
		placed:  map[fyne.Window]bool{},
		center:  fyne.Window.CenterOnScreen,
	}
	if _, ok := fa.Settings().Theme().(appTheme); !ok { // (RunWindows sets it on the UI thread first)
		fa.Settings().SetTheme(newTheme())
	}
	u.dash = NewDashboard(u.src, DashboardOptions{
		Status:         u.status,
		CodexSetup:     u.codexConfigured,
		ConfigureCodex: func() (app.CodexConfigWrite, error) { return u.store.WriteCodexConfig("") },
		AskFirst:       u.askFirst,
		CodexLogin:     u.codexLogin,
		Strategy:       u.strategy,
		UseCodexLogin:  u.useCodexLogin,
		PointCodex:     u.pointCodex,
		TestRelay:      u.testRelay,
		SignIn:         func() { u.showAccounts(); u.accounts.signIn("") },
		AddKey:         func() { u.showAccounts(); u.accounts.showAdd(addAPIKey) },
		OpenAccounts:   u.showAccounts,
		OpenSettings:   u.showSettings,
		OpenUsage:      u.showUsage,
		Resume:         u.resume,
		Now:            func() time.Time { return u.now() },
		PruneSecrets:   u.pruneSecrets,
		Async:          func(f func()) { u.async(f) },
		Changed:        u.changed,
	})
	return u
}

// NewWithRelay builds the UI over a relay this process runs, with its own listener (tests,
// screenshots).
func NewWithRelay(fa fyne.App, r *relay.Relay, log *slog.Logger) *UI {
	u := New(fa, r.App, log)
	u.svc = r.NewService()
	u.src, u.ctl, u.dash.src = r.Proxy, u.svc, r.Proxy
	u.usage = source.RelayUsage(r)
	u.redeem = r.RedeemCredit
	return u
}

// ShowFixed makes the windows show src and status instead of the relay's live state, at the
// clock time now, without starting anything: for screenshots and demonstrations. The
// accounts themselves still come from the app.
func (u *UI) ShowFixed(src source.Source, status app.ServiceStatus, now time.Time) {
	u.src, u.fixed = src, &status
	u.dash.src = src
	u.now = func() time.Time { return now }
	u.dash.opt.Now = u.now
	u.refresh()
}

// status is the listener's status (or the fixed one of ShowFixed).
func (u *UI) status() app.ServiceStatus {
	if u.fixed != nil {
		return *u.fixed
	}
	return u.ctl.Status()
}

// strategy is the routing strategy in force.
func (u *UI) strategy() string { return strategyOf(u.store.Settings()) }

// strategyOf is the routing strategy st sets (priority when it sets none).
func strategyOf(st app.Settings) string {
	if st.Strategy == "" {
		return proxy.StrategyPriority
	}
	return st.Strategy
}

// useCodexLogin is the first run's one action, with the test request sent to the relay where
// it listens now ("" skips it when the relay is not serving).
func (u *UI) useCodexLogin(ctx context.Context) (app.FirstRun, error) {
	addr := ""
	if st := u.status(); st.Running {
		addr = st.Addr
	}
	return u.store.UseCodexLogin(ctx, addr)
}

// pointCodex points Codex at the relay and sends the test request where the relay listens now.
func (u *UI) pointCodex(ctx context.Context) (app.FirstRun, error) {
	addr := ""
	if st := u.status(); st.Running {
		addr = st.Addr
	}
	return u.store.PointCodexAndTest(ctx, addr)
}

// testRelay sends the first run's test request again to the relay where it listens now.
func (u *UI) testRelay(ctx context.Context) (app.RelayTest, error) {
	st := u.status()
	if !st.Running {
		return app.RelayTest{}, nil
	}
	return u.store.TestRelay(ctx, st.Addr)
}

// How the open windows follow the relay (source.Follow): changes closer than followGap are
// shown together, and they sleep source.UsageEvery at most (the Usage window reads the ledger
// on that clock).
const followGap = 250 * time.Millisecond

// poll shows a view whenever the relay changes, a window asks (poke), or the clock changes what
// they show; it reads off the UI thread and applies on it.
func (u *UI) poll(ctx context.Context) {
	source.Follow(ctx, u.src.Changes, u.poke, followGap, source.UsageEvery, func() time.Duration {
		v := u.fetch()
		fyne.Do(func() { u.apply(v) })
		return u.nextChange(v)
	})
}

// nextChange is how long until the clock alone changes what the windows show of v: a rest
// ends, a window resets, a banked reset nears its expiry (look.NextChange), or the catalog's
// age reaches its next minute.
func (u *UI) nextChange(v view) time.Duration {
	d := look.NextChange(v.snap, u.now())
	if age := v.snap.Catalog.AgeMs; age >= 0 {
		next := time.Minute - time.Duration(age%60_000)*time.Millisecond
		if d == 0 || next < d {
			d = next
		}
	}
	return d
}

// fetch reads the proxy's state; it may run on any goroutine.
func (u *UI) fetch() view {
	v := view{snap: u.src.Stats(), traces: u.src.Traces(source.TracesRead), svc: u.status()}
	setup := u.codexConfigured()
	v.codex = &setup
	v.strategy = strategyOf(u.store.Settings())
	v.pace = look.Pace(u.pace.Read(v.snap.Requests.Total, u.elapsed(), u.usageSource(), v.snap.Accounts, u.now()), u.now())
	if len(v.snap.Accounts) == 0 {
		// Only while there is no account (for the first-run card).
		v.login = u.codexLogin()
	}
	if err := u.store.ReloadError(); err != nil {
		v.notice = "The settings file cannot be followed, so the last good settings stay in force: " + err.Error()
	} else if v.svc.Refusing != "" {
		v.notice = upperFirst(v.svc.Refusing) + "."
	} else if v.svc.Warning != "" {
		v.notice = "Listen address: " + v.svc.Warning
	}
	u.orphansMu.Lock()
	v.orphans = u.orphans
	u.orphansMu.Unlock()
	return v
}

// checkOrphans reads which keychain entries belong to no account (off the UI thread).
func (u *UI) checkOrphans() {
	orphans, err := u.store.OrphanSecrets()
	if err != nil {
		u.log.Debug("cannot list the keychain entries", "error", err)
		return
	}
	u.orphansMu.Lock()
	u.orphans = orphans
	u.orphansMu.Unlock()
	u.changed()
}

// pruneSecrets removes the keychain entries no account names, once their names were shown
// and the removal confirmed. Only this settings folder's own entries are listed, and only
// those that are still left over when it runs are removed (RemoveLeftovers checks again).
func (u *UI) pruneSecrets() {
	u.orphansMu.Lock()
	names := slices.Clone(u.orphans)
	u.orphansMu.Unlock()
	if len(names) == 0 {
		return
	}
	w := u.parent()
	list := widget.NewLabel(strings.Join(names, "\n"))
	msg := note("These keychain entries of Codex Relay belong to this settings folder and name no account. Remove them?")
	dialog.ShowCustomConfirm("Remove keychain entries?", "Remove", "Cancel", widthBox(460, msg, list), func(ok bool) {
		if !ok {
			return
		}
		u.async(func() {
			_, err := u.store.RemoveLeftovers(names, false)
			fyne.Do(func() {
				if err != nil {
					u.showError(w, err)
				}
			})
			u.checkOrphans()
		})
	}, w)
}

// apply shows v in the open windows (UI thread).
func (u *UI) apply(v view) {
	u.last = v
	if u.dashShown {
		u.dash.show(v)
	}
	if u.accounts != nil && u.accounts.shown {
		u.accounts.show(v)
	}
	if u.usageWin != nil {
		u.usageWin.tick()
	}
	if u.settings != nil {
		u.settings.sync(v)
	}
}

// refresh fetches and applies at once (UI thread; used at start and by tests).
func (u *UI) refresh() { u.apply(u.fetch()) }

// changed asks for an early tick; it never blocks.
func (u *UI) changed() {
	select {
	case u.poke <- struct{}{}:
	default:
	}
}

func (u *UI) resume() {
	u.async(func() {
		err := u.ctl.Resume()
		fyne.Do(func() {
			if err != nil {
				u.showError(u.parent(), err)
			}
		})
		u.changed()
	})
}

// codexConfig is the provider block for ~/.codex/config.toml.
func (u *UI) codexConfig() string { return u.store.CodexConfig() }

// codexConfigured says whether Codex's config.toml points at the relay (read again only when
// the file or the settings changed: the poller asks every second).
func (u *UI) codexConfigured() app.CodexSetup { return u.codex.Configured() }

// codexLogin is the Codex CLI's login (read again only when auth.json or the settings changed).
func (u *UI) codexLogin() app.CodexLogin { return u.codex.Login() }

func (u *UI) copyText(s string) { u.fa.Clipboard().SetContent(s) }

// askFirst asks in a dialog on the dashboard (title, the button that agrees, what it does) and
// calls ok when the user agrees.
func (u *UI) askFirst(title, confirm, text string, ok func()) {
	dialog.ShowCustomConfirm(title, confirm, "Cancel", widthBox(560, note(text)), func(yes bool) {
		if yes {
			ok()
		}
	}, u.parent())
}

// configureCodex asks, then points Codex at the relay (config.toml and .env, each with a
// backup); with no account it says to add one first, and changes nothing.
func (u *UI) configureCodex() {
	w := u.parent()
	if len(u.store.Accounts()) == 0 {
		dialog.ShowInformation("Add an account first", "Codex Relay has no account yet: pointed at it now, Codex would have no model\n"+
			"and lose the provider it has. Add an account (the dashboard shows the ways), then Configure Codex.", w)
		return
	}
	path := filepath.Join(u.store.CodexHome(), "config.toml")
	u.askFirst("Configure Codex?", "Configure", configureAskText(path), func() {
		u.async(func() {
			res, err := u.store.WriteCodexConfig("")
			fyne.Do(func() {
				if err != nil {
					u.showError(w, err)
					return
				}
				text := "Codex now sends its requests through Codex Relay (" + res.Path + ")."
				switch res.Change {
				case app.Unchanged:
					text = "Codex already sends its requests through Codex Relay; " + res.Path + " is unchanged."
				case app.ConfigUpdated:
					text += "\n\nThe previous config was saved as:\n" + res.Backup
				}
				if s := res.Env.Summary(tildePath); s != "" {
					text += "\n\n" + s
				}
				text += "\n\n" + undoCodexText
				dialog.ShowCustom("Codex configured", "OK", widthBox(560, note(text)), w)
			})
		})
	})
}

// openURL opens a web page in the browser (for the ChatGPT sign-in); safe from any goroutine.
func (u *UI) openURL(raw string) error {
	target, err := url.Parse(raw)
	if err != nil {
		return err
	}
	var openErr error
	fyne.DoAndWait(func() { openErr = u.fa.OpenURL(target) })
	return openErr
}

// showError shows err in a dialog on w. A keychain failure says what to install or unlock.
func (u *UI) showError(w fyne.Window, err error) {
	if err == nil {
		return
	}
	u.log.Warn("ui action failed", "error", err)
	var ke *app.KeychainError
	if errors.As(err, &ke) {
		msg := widget.NewLabel("Codex Relay could not use the system keychain:\n" + ke.Err.Error())
		msg.Wrapping = fyne.TextWrapWord
		advice := widget.NewLabel(ke.Advice)
		advice.Wrapping = fyne.TextWrapWord
		advice.TextStyle.Bold = true
		dialog.ShowCustom("Keychain unavailable", "Close", widthBox(460, msg, advice), w)
		return
	}
	dialog.ShowError(err, w)
}

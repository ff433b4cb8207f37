package window

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// settingsWindow edits the settings; each change applies through an app method, off the UI
// thread (saving waits for the settings file's lock, which another process may hold), and each
// error shows next to its field, in app's words. A check box or a choice applies at once; a
// number (the port too) applies when the user is done with it (Return, or leaving the field),
// not at each keystroke; no field has a button of its own.
type settingsWindow struct {
	u   *UI
	win fyne.Window

	port    *numberEntry
	portMsg *widget.Label

	strategy    *widget.Select
	strategyMsg *widget.Label

	swr      *widget.Check
	staleMax *numberEntry
	staleMsg *widget.Label
	ttl      *numberEntry
	ttlMsg   *widget.Label

	timeouts   map[app.Timeout]*numberEntry
	timeoutMsg map[app.Timeout]*widget.Label

	// The pool: fields read, checked and saved through their rows of the settings table.
	hold       *numberEntry
	holdMsg    *widget.Label
	credits    *widget.Select
	creditsMsg *widget.Label

	notify       map[string]*widget.Check // by app.Notify* kind
	threshold    *numberEntry
	thresholdMsg *widget.Label
	notifyMsg    *widget.Label

	localKey    *widget.Check
	keyShown    *widget.Entry
	keyBox      *fyne.Container
	localKeyMsg *widget.Label

	startAtLogin *widget.Check
	loginMsg     *widget.Label

	// loaded is the settings generation the fields show.
	loaded uint64
	// offer is the dialog last shown after the local key was turned on (tests).
	offer *dialog.ConfirmDialog
}

// strategyNotes explain each routing strategy in one line.
var strategyNotes = map[string]string{
	proxy.StrategyPriority:      "the first healthy account in the list takes every request; the next only when it fails, reaches its limit or rests.",
	proxy.StrategyRoundRobin:    "the healthy accounts take turns, in list order.",
	proxy.StrategyMostQuotaLeft: "untouched accounts first, then the ChatGPT accounts with the most of their windows left.",
}

// notifyLabels say what each kind of notification is about.
var notifyLabels = map[string]string{
	app.NotifyNeedsLogin:  "An account needs a new sign-in, or its key is rejected",
	app.NotifyLimit:       "An account reaches its usage limit (with the time it resets)",
	app.NotifyAllResting:  "Every account is resting (with the first one back)",
	app.NotifyWindowReset: "An account's five-hour or weekly window resets",
	app.NotifyLowCapacity: "The five-hour capacity left falls below",
	app.NotifyResetCredit: "A banked reset expires within a day, may be redeemed, or was",
}

// label is the window's label of a setting, from the settings table.
func label(name app.SettingName) string { return row(name).Label }

// row is the settings table's row of a setting.
func row(name app.SettingName) app.Setting {
	st, ok := app.LookupSetting(string(name))
	if !ok {
		panic("ui: no setting " + string(name))
	}
	return st
}

func newSettingsWindow(u *UI) *settingsWindow {
	s := &settingsWindow{u: u}
	s.win = u.toolWindow("Settings – Codex Relay", s.build(), fyne.NewSize(680, 760))
	s.load()
	return s
}

// open shows the window with the current settings. A local key shown when it was made is not
// shown again: it was shown once.
func (s *settingsWindow) open() {
	s.keyShown.SetText("")
	s.keyBox.Hide()
	s.load()
	s.u.showWindow(s.win)
}

func (s *settingsWindow) build() fyne.CanvasObject {
	// Proxy: the port (restarts the listener) and the routing strategy.
	s.port, s.portMsg = newNumberEntry(), errorLabel()
	s.strategy = widget.NewSelect(proxy.Strategies, nil)
	s.strategyMsg = errorLabel()
	var explain []string
	for _, st := range proxy.Strategies {
		explain = append(explain, st+": "+strategyNotes[st])
	}

	// Model catalog.
	s.swr = widget.NewCheck("Serve the cached catalog while it refreshes (stale-while-revalidate)", nil)
	s.staleMax, s.staleMsg = newNumberEntry(), errorLabel()
	s.ttl, s.ttlMsg = newNumberEntry(), errorLabel()

	// Upstream timeouts.
	s.timeouts, s.timeoutMsg = map[app.Timeout]*numberEntry{}, map[app.Timeout]*widget.Label{}
	var timeoutRows []fyne.CanvasObject
	for _, t := range app.Timeouts {
		e := newNumberEntry()
		s.timeouts[t], s.timeoutMsg[t] = e, errorLabel()
		timeoutRows = append(timeoutRows, widget.NewLabel(label(t.Setting())),
			container.NewVBox(unitField(e, "s"), s.timeoutMsg[t]))
	}

	// The pool.
	s.hold, s.holdMsg = newNumberEntry(), errorLabel()
	s.credits, s.creditsMsg = widget.NewSelect(proxy.ResetCreditModes, nil), errorLabel()

	// Notifications.
	s.notify = map[string]*widget.Check{}
	var checks []fyne.CanvasObject
	s.threshold, s.thresholdMsg, s.notifyMsg = newNumberEntry(), errorLabel(), errorLabel()
	for _, kind := range app.NotifyKinds {
		c := widget.NewCheck(notifyLabels[kind], nil)
		s.notify[kind] = c
		if kind == app.NotifyLowCapacity {
			checks = append(checks, container.NewHBox(c, container.New(&sized{min: fyne.NewSize(90, 0)}, unitField(s.threshold, "%"))),
				s.thresholdMsg)
			continue
		}
		checks = append(checks, c)
	}

	// Security and system.
	s.localKey = widget.NewCheck("Require a local API key from clients", nil)
	s.keyShown = widget.NewEntry()
	passScroll(s.keyShown)
	s.keyShown.TextStyle.Monospace = true
	s.keyShown.Disable()
	copyKey := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { s.u.copyText(s.keyShown.Text) })
	s.keyBox = container.NewVBox(
		container.NewBorder(nil, nil, nil, copyKey, s.keyShown),
		note("Shown once: copy it now. Clients send it as \"Authorization: Bearer <key>\"; turning the key off and on makes a new one."))
	s.keyBox.Hide()
	s.localKeyMsg = errorLabel()
	s.startAtLogin = widget.NewCheck("Start Codex Relay when I log in", nil)
	s.loginMsg = errorLabel()

	form := func(rows ...fyne.CanvasObject) fyne.CanvasObject {
		return container.New(layout.NewFormLayout(), rows...)
	}
	content := container.NewVBox(
		// One way for every field, said once: a demanding user expects a settings window to
		// keep what they change without a button to find (only the port had Apply).
		hint("Every change is saved as you make it: a choice at once, a number when you press Return or leave its field."),
		heading("Proxy"),
		form(
			widget.NewLabel("Listen port"), container.NewVBox(
				s.port, hint("e.g. 7455; from 1024 to 65535"), s.portMsg),
			widget.NewLabel(label(app.SettingStrategy)), container.NewVBox(s.strategy, hint(strings.Join(explain, "\n")), s.strategyMsg),
		),
		widget.NewSeparator(),
		heading("Model catalog"),
		s.swr,
		form(
			widget.NewLabel(label(app.SettingStaleMaxAge)), container.NewVBox(unitField(s.staleMax, "min"), s.staleMsg),
			widget.NewLabel(label(app.SettingTTL)), container.NewVBox(unitField(s.ttl, "min"), s.ttlMsg),
		),
		widget.NewSeparator(),
		heading("Upstream timeouts"),
		form(timeoutRows...),
		widget.NewSeparator(),
		heading("When every account rests"),
		form(
			widget.NewLabel(label(app.SettingHold)), container.NewVBox(unitField(s.hold, "s"), hint(row(app.SettingHold).Help), s.holdMsg),
			widget.NewLabel(label(app.SettingResetCredits)), container.NewVBox(s.credits, hint(row(app.SettingResetCredits).Help), s.creditsMsg),
		),
		widget.NewSeparator(),
		heading("Notifications"),
		container.NewVBox(checks...),
		s.notifyMsg,
		widget.NewSeparator(),
		heading("Security"),
		s.localKey,
		s.keyBox,
		s.localKeyMsg,
		widget.NewSeparator(),
		heading("System"),
		s.startAtLogin,
		s.loginMsg,
	)
	s.port.onDone = s.applyPort
	s.staleMax.onDone = s.applyCatalogTiming
	s.ttl.onDone = s.applyCatalogTiming
	for name, e := range s.timeouts {
		e.onDone = func() { s.applyTimeout(name, e.Text) }
	}
	s.threshold.onDone = func() { s.applyThreshold(s.threshold.Text) }
	s.hold.onDone = func() { s.applySetting(app.SettingHold, s.hold.Text, s.holdMsg) }
	return container.NewVScroll(container.NewPadded(content))
}

// passScroll makes a one-line field leave the mouse wheel to the window: a field scrolls its own
// text by default, and so took the wheel wherever the pointer was over one (the fields span the
// window's width). Its values are short (a port, a number, the local key), shown whole.
func passScroll(e *widget.Entry) {
	e.Wrapping = fyne.TextWrapOff
	e.Scroll = fyne.ScrollNone
}

// unitField is an entry with its unit after it ("min", "s", "%").
func unitField(e fyne.CanvasObject, unit string) fyne.CanvasObject {
	return container.NewBorder(nil, nil, nil, widget.NewLabel(unit), e)
}

// numberEntry is a field for a number that is saved when the user is done with it: on Return,
// or when the focus leaves it, and only when its text changed since it was shown or saved.
type numberEntry struct {
	widget.Entry
	// onDone saves the field.
	onDone func()
	// saved is the text last shown from the settings or handed to onDone.
	saved string
}

func newNumberEntry() *numberEntry {
	e := &numberEntry{}
	passScroll(&e.Entry)
	e.ExtendBaseWidget(e)
	e.OnSubmitted = func(string) { e.done() }
	return e
}

// show puts the settings' value in the field.
func (e *numberEntry) show(text string) {
	e.saved = text
	e.SetText(text)
}

// FocusLost saves the field as the focus leaves it.
func (e *numberEntry) FocusLost() {
	e.Entry.FocusLost()
	e.done()
}

func (e *numberEntry) done() {
	if e.Text == e.saved || e.onDone == nil {
		return
	}
	e.saved = e.Text
	e.onDone()
}

// load shows the current settings (and the live catalog values, which include environment
// overrides), without applying anything.
func (s *settingsWindow) load() {
	s.detach()
	st := s.u.relay.Settings()
	s.loaded = st.Generation
	c := s.u.relay.Proxy.Stats().Catalog
	focused := s.win.Canvas().Focused()
	setEntry := func(e *numberEntry, text string) {
		if focused != e { // never under the user's fingers
			e.show(text)
		}
	}
	if _, port, err := net.SplitHostPort(s.u.relay.ListenAddr()); err == nil {
		setEntry(s.port, port)
	}
	strategy := st.Strategy
	if strategy == "" {
		strategy = proxy.StrategyPriority
	}
	s.strategy.SetSelected(strategy)
	s.swr.SetChecked(c.SWREnabled)
	setEntry(s.staleMax, strconv.FormatInt(c.StaleMaxAgeMs/60000, 10))
	setEntry(s.ttl, strconv.FormatInt(c.TTLMs/60000, 10))
	for _, t := range app.Timeouts {
		setEntry(s.timeouts[t], strconv.FormatInt(int64(st.Timeouts.InForce(t).Seconds()), 10))
	}
	setEntry(s.hold, row(app.SettingHold).Show(s.u.relay))
	s.credits.SetSelected(row(app.SettingResetCredits).Show(s.u.relay))
	for kind, c := range s.notify {
		c.SetChecked(st.Notifications.Enabled(kind))
	}
	setEntry(s.threshold, strconv.Itoa(st.Notifications.Threshold()))
	s.localKey.SetChecked(st.LocalAPIKey)
	s.startAtLogin.SetChecked(st.StartAtLogin)
	s.attach()
}

func (s *settingsWindow) detach() {
	s.strategy.OnChanged = nil
	s.swr.OnChanged = nil
	s.credits.OnChanged = nil
	for _, c := range s.notify {
		c.OnChanged = nil
	}
	s.localKey.OnChanged = nil
	s.startAtLogin.OnChanged = nil
}

func (s *settingsWindow) attach() {
	s.strategy.OnChanged = s.applyStrategy
	s.swr.OnChanged = s.applySWR
	s.credits.OnChanged = func(v string) { s.applySetting(app.SettingResetCredits, v, s.creditsMsg) }
	for kind, c := range s.notify {
		c.OnChanged = func(on bool) { s.applyNotification(kind, on) }
	}
	s.localKey.OnChanged = s.applyLocalKey
	s.startAtLogin.OnChanged = s.applyStartAtLogin
}

// sync follows changes made elsewhere (the tray, the CLI, another process) each tick.
func (s *settingsWindow) sync(v view) {
	if v.snap.SettingsGeneration != s.loaded {
		s.load()
		return
	}
	if on := v.snap.Catalog.SWREnabled; s.swr.Checked != on {
		setCheck(s.swr, on)
	}
}

// setCheck changes a check box without running its OnChanged.
func setCheck(c *widget.Check, on bool) {
	c.Checked = on
	c.Refresh()
}

// parsePort reads a listen port typed by the user.
func parsePort(text string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(text))
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a port number: enter a number from 1024 to 65535", text)
	case p < 1024 || p > 65535:
		return 0, fmt.Errorf("port %d is out of range: use 1024 to 65535 (ports below 1024 need root)", p)
	case p == 1455:
		return 0, errors.New("port 1455 is the Codex sign-in callback: choose another port")
	}
	return p, nil
}

// applyPort moves the proxy to the typed port: Service.SetListen checks the new port, then
// restarts the listener on it (keeping the old one if the new one cannot be opened).
func (s *settingsWindow) applyPort() {
	port, err := parsePort(s.port.Text)
	if err != nil {
		setError(s.portMsg, err)
		return
	}
	host, _, err := net.SplitHostPort(s.u.relay.ListenAddr())
	if err != nil {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	setMessage(s.portMsg, "Restarting the proxy on "+addr+"…", widget.MediumImportance)
	s.u.async(func() {
		err := s.u.ctl.SetListen(addr)
		fyne.Do(func() {
			switch {
			case err != nil:
				setError(s.portMsg, err)
			case s.u.relay.ListenAddr() != addr:
				setMessage(s.portMsg, "Saved, but CODEXRELAY_LISTEN="+s.u.relay.ListenAddr()+
					" overrides it while that variable is set.", widget.WarningImportance)
			default:
				setMessage(s.portMsg, "Listening on http://"+s.u.ctl.Status().Addr+"/v1. Codex needs the new "+
					"port too: the dashboard's Codex line offers to configure it.", widget.SuccessImportance)
			}
		})
		s.u.changed()
	})
}

// save runs apply off the UI thread and hands its error to show on the UI thread; the windows
// then show the new settings.
func (s *settingsWindow) save(apply func() error, show func(error)) {
	s.u.async(func() {
		err := apply()
		fyne.Do(func() { show(err) })
		s.u.changed()
	})
}

// applySetting saves a setting as typed or chosen, read and checked by its row of the settings
// table, the same as `codexrelay settings set`.
func (s *settingsWindow) applySetting(name app.SettingName, text string, msg *widget.Label) {
	set, err := row(name).Parse(strings.TrimSpace(text))
	if err != nil {
		setError(msg, err)
		return
	}
	s.save(func() error { return set(s.u.relay) }, func(err error) { setError(msg, err) })
}

func (s *settingsWindow) applyStrategy(strategy string) {
	s.save(func() error { return s.u.relay.SetStrategy(strategy) },
		func(err error) { setError(s.strategyMsg, err) })
}

func (s *settingsWindow) applySWR(on bool) {
	s.save(func() error { return s.u.relay.SetStaleWhileRevalidate(on) }, func(err error) {
		setError(s.staleMsg, err)
		if err != nil {
			setCheck(s.swr, !on)
			return
		}
		s.u.refresh()
	})
}

// parseWhole reads a whole number typed in a field.
func parseWhole(text string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", strings.TrimSpace(text))
	}
	return n, nil
}

// applyCatalogTiming saves the stale maximum age and the TTL; app says when they do not fit
// together (a stale age below the TTL), and its message shows under the field it names.
func (s *settingsWindow) applyCatalogTiming() {
	stale, errStale := parseWhole(s.staleMax.Text)
	ttl, errTTL := parseWhole(s.ttl.Text)
	setError(s.staleMsg, errStale)
	setError(s.ttlMsg, errTTL)
	if errStale != nil || errTTL != nil {
		return
	}
	if stale < 1 || ttl < 1 { // zero would mean "keep the current value" to app
		if stale < 1 {
			setError(s.staleMsg, errors.New("enter at least 1 minute"))
		}
		if ttl < 1 {
			setError(s.ttlMsg, errors.New("enter at least 1 minute"))
		}
		return
	}
	s.save(func() error {
		return s.u.relay.SetCatalogTiming(time.Duration(stale)*time.Minute, time.Duration(ttl)*time.Minute)
	}, func(err error) {
		switch fieldOf(err) {
		case app.FieldTTL:
			setError(s.ttlMsg, err)
		default:
			setError(s.staleMsg, err)
		}
	})
}

// applyTimeout saves one upstream timeout, typed in seconds.
func (s *settingsWindow) applyTimeout(name app.Timeout, text string) {
	n, err := parseWhole(text)
	if err != nil {
		setError(s.timeoutMsg[name], err)
		return
	}
	s.save(func() error { return s.u.relay.SetTimeout(name, time.Duration(n)*time.Second) },
		func(err error) { setError(s.timeoutMsg[name], err) })
}

func (s *settingsWindow) applyNotification(kind string, on bool) {
	s.save(func() error { return s.u.relay.SetNotification(kind, on) },
		func(err error) { setError(s.notifyMsg, err) })
}

func (s *settingsWindow) applyThreshold(text string) {
	n, err := parseWhole(text)
	if err != nil {
		setError(s.thresholdMsg, err)
		return
	}
	s.save(func() error { return s.u.relay.SetLowCapacityThreshold(n) },
		func(err error) { setError(s.thresholdMsg, err) })
}

func (s *settingsWindow) applyLocalKey(on bool) {
	s.localKey.Disable()
	s.u.async(func() {
		// Whether Codex sends its requests through the relay now, before the key changes that.
		configured := s.u.codexConfigured().Configured
		key, err := s.u.relay.SetLocalKey(on)
		fyne.Do(func() {
			s.localKey.Enable()
			if err != nil {
				setCheck(s.localKey, !on)
				if isKeychainError(err) {
					s.u.showError(s.win, err)
				}
				setError(s.localKeyMsg, err)
				return
			}
			setError(s.localKeyMsg, nil)
			if key == "" {
				s.keyShown.SetText("")
				s.keyBox.Hide()
				return
			}
			s.keyShown.SetText(key)
			s.keyBox.Show()
			if configured {
				// Codex would be refused without the key. Where Codex does not use the relay,
				// its configuration is left alone: writing it would make the relay its provider.
				s.offerCodexConfig()
			}
		})
	})
}

// offerCodexConfig offers, once the local key is on and when Codex was configured for the
// relay, to make Codex send it: the provider block then carries the key itself
// (experimental_bearer_token), so that every Codex front end sends it without an environment
// variable (the desktop app and the IDE extensions do not inherit a shell's).
func (s *settingsWindow) offerCodexConfig() {
	msg := note("Codex must send the key now. Codex Relay can write it into its provider in ~/.codex/config.toml " +
		"(as experimental_bearer_token, after a backup of the file, which then becomes readable by you alone), " +
		"so that the Codex CLI, its desktop app and its IDE extensions all send it, with no environment variable to set.")
	content := widthBox(520, msg)
	s.offer = dialog.NewCustomConfirm("Update the Codex configuration?", "Update config.toml", "Not now", content,
		func(ok bool) {
			if !ok {
				return
			}
			s.u.async(func() {
				res, err := s.u.relay.WriteCodexConfig("")
				fyne.Do(func() {
					if err != nil {
						setError(s.localKeyMsg, fmt.Errorf("could not update the Codex configuration: %w", err))
						return
					}
					setMessage(s.localKeyMsg, configLine(res).text+" Codex sends the key from now on.",
						widget.SuccessImportance)
					s.u.changed()
				})
			})
		}, s.win)
	s.offer.Show()
}

func (s *settingsWindow) applyStartAtLogin(on bool) {
	s.startAtLogin.Disable()
	s.u.async(func() {
		err := s.u.relay.SetStartAtLogin(on)
		fyne.Do(func() {
			s.startAtLogin.Enable()
			if err != nil {
				setCheck(s.startAtLogin, !on)
				err = fmt.Errorf("could not change the login item: %w", err)
			}
			setError(s.loginMsg, err)
		})
	})
}

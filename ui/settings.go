package ui

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// settingsWindow edits the settings; each change applies at once through an app method, and
// each error shows next to its field.
type settingsWindow struct {
	u   *UI
	win fyne.Window

	port      *widget.Entry
	portApply *widget.Button
	portMsg   *widget.Label

	swr      *widget.Check
	staleMax *widget.Entry
	ttl      *widget.Entry
	catMsg   *widget.Label

	strategy    *widget.Select
	strategyMsg *widget.Label

	localKey    *widget.Check
	keyShown    *widget.Entry
	keyBox      *fyne.Container
	localKeyMsg *widget.Label

	startAtLogin *widget.Check
	loginMsg     *widget.Label

	// loaded is the settings generation the fields show.
	loaded uint64
}

func newSettingsWindow(u *UI) *settingsWindow {
	s := &settingsWindow{u: u}
	s.win = u.toolWindow("Settings – Codex Relay", s.build(), fyne.NewSize(620, 0))
	s.load()
	return s
}

func (s *settingsWindow) open() {
	s.load()
	s.win.Show()
	s.win.RequestFocus()
}

func (s *settingsWindow) build() fyne.CanvasObject {
	// Proxy: the port (restarts the listener) and the routing strategy.
	s.port = widget.NewEntry()
	s.port.SetPlaceHolder("7455")
	s.port.OnSubmitted = func(string) { s.applyPort() }
	s.portApply = widget.NewButton("Apply", s.applyPort)
	s.portMsg = errorLabel()
	s.strategy = widget.NewSelect([]string{proxy.StrategyPriority, proxy.StrategyRoundRobin}, nil)
	s.strategyMsg = errorLabel()

	// Model catalog.
	s.swr = widget.NewCheck("Serve the cached catalog while it refreshes (stale-while-revalidate)", nil)
	s.staleMax = widget.NewEntry()
	s.ttl = widget.NewEntry()
	s.catMsg = errorLabel()

	// Security and system.
	s.localKey = widget.NewCheck("Require a local API key from clients", nil)
	s.keyShown = widget.NewEntry()
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
	minutesField := func(e *widget.Entry) fyne.CanvasObject {
		e.SetPlaceHolder("minutes")
		return container.NewBorder(nil, nil, nil, widget.NewLabel("min"), e)
	}
	content := container.NewVBox(
		heading("Proxy"),
		form(
			widget.NewLabel("Listen port"), container.NewVBox(
				container.NewBorder(nil, nil, nil, s.portApply, s.port), s.portMsg),
			widget.NewLabel("Routing"), container.NewVBox(s.strategy,
				note("priority: the first healthy account takes every request, the next one only when it "+
					"fails. round-robin: healthy accounts take turns."),
				s.strategyMsg),
		),
		widget.NewSeparator(),
		heading("Model catalog"),
		s.swr,
		form(
			widget.NewLabel("Maximum stale age"), minutesField(s.staleMax),
			widget.NewLabel("Catalog TTL"), container.NewVBox(minutesField(s.ttl), s.catMsg),
		),
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
	// Wire the handlers after the first load so that setting the values does not apply them.
	return container.NewPadded(content)
}

// load shows the current settings (and the live catalog values, which include environment
// overrides), without applying anything.
func (s *settingsWindow) load() {
	s.detach()
	st := s.u.relay.Settings()
	s.loaded = st.Generation
	c := s.u.relay.Proxy.Stats().Catalog
	focused := s.win.Canvas().Focused()
	setText := func(e *widget.Entry, text string) {
		if focused != e { // never under the user's fingers
			e.SetText(text)
		}
	}
	if _, port, err := net.SplitHostPort(s.u.relay.ListenAddr()); err == nil {
		setText(s.port, port)
	}
	strategy := st.Strategy
	if strategy == "" {
		strategy = proxy.StrategyPriority
	}
	s.strategy.SetSelected(strategy)
	s.swr.SetChecked(c.SWREnabled)
	setText(s.staleMax, strconv.FormatInt(c.StaleMaxAgeMs/60000, 10))
	setText(s.ttl, strconv.FormatInt(c.TTLMs/60000, 10))
	s.localKey.SetChecked(st.LocalAPIKey)
	s.startAtLogin.SetChecked(st.StartAtLogin)
	s.attach()
}

func (s *settingsWindow) detach() {
	s.strategy.OnChanged = nil
	s.swr.OnChanged = nil
	s.staleMax.OnChanged = nil
	s.ttl.OnChanged = nil
	s.localKey.OnChanged = nil
	s.startAtLogin.OnChanged = nil
}

func (s *settingsWindow) attach() {
	s.strategy.OnChanged = s.applyStrategy
	s.swr.OnChanged = s.applySWR
	s.staleMax.OnChanged = func(string) { s.applyCatalogTiming() }
	s.ttl.OnChanged = func(string) { s.applyCatalogTiming() }
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

// parsePort checks a listen port typed by the user.
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
	setMessage(s.portMsg, "Restarting the proxy on "+addr+"…", widget.LowImportance)
	s.portApply.Disable()
	s.u.async(func() {
		err := s.u.svc.SetListen(addr)
		fyne.Do(func() {
			s.portApply.Enable()
			switch {
			case err != nil:
				setError(s.portMsg, err)
			case s.u.relay.ListenAddr() != addr:
				setMessage(s.portMsg, "Saved, but CODEXRELAY_LISTEN="+s.u.relay.ListenAddr()+
					" overrides it while that variable is set.", widget.WarningImportance)
			default:
				setMessage(s.portMsg, "Listening on http://"+s.u.svc.Status().Addr+"/v1. Update Codex's "+
					"config (tray: Configure Codex…) to the new port.", widget.SuccessImportance)
			}
		})
		s.u.changed()
	})
}

func (s *settingsWindow) applyStrategy(strategy string) {
	setError(s.strategyMsg, s.u.relay.SetStrategy(strategy))
}

func (s *settingsWindow) applySWR(on bool) {
	if err := s.u.relay.SetStaleWhileRevalidate(on); err != nil {
		setError(s.catMsg, err)
		setCheck(s.swr, !on)
		return
	}
	setError(s.catMsg, nil)
	s.u.refresh()
}

// parseMinutes reads a positive whole number of minutes.
func parseMinutes(what, text string) (time.Duration, error) {
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 1 || n > 7*24*60 {
		return 0, fmt.Errorf("%s: enter whole minutes from 1 to 10080", what)
	}
	return time.Duration(n) * time.Minute, nil
}

func (s *settingsWindow) applyCatalogTiming() {
	stale, err := parseMinutes("Maximum stale age", s.staleMax.Text)
	if err == nil {
		var ttl time.Duration
		if ttl, err = parseMinutes("Catalog TTL", s.ttl.Text); err == nil {
			err = s.u.relay.SetCatalogTiming(stale, ttl)
		}
	}
	setError(s.catMsg, err)
}

func (s *settingsWindow) applyLocalKey(on bool) {
	s.localKey.Disable()
	s.u.async(func() {
		key, err := s.u.relay.SetLocalKey(on)
		fyne.Do(func() {
			s.localKey.Enable()
			if err != nil {
				setCheck(s.localKey, !on)
				var ke *app.KeychainError
				if errors.As(err, &ke) {
					s.u.showError(s.win, err)
				}
				setError(s.localKeyMsg, err)
				return
			}
			setError(s.localKeyMsg, nil)
			if key != "" {
				s.keyShown.SetText(key)
				s.keyBox.Show()
			} else {
				s.keyShown.SetText("")
				s.keyBox.Hide()
			}
		})
	})
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

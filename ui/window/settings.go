package window

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// settingsWindow edits the settings, one field a row of app.SettingsTable, drawn by the row's
// kind under its section (a check box, a choice, a number in the row's unit, a text), read,
// checked and saved through the row as `codexrelay settings set` does. Each change applies
// off the UI thread (saving waits for the settings file's lock, which another process may
// hold), and each error shows under its field, in app's words. A check box or a choice
// applies at once; a number (the port too) when the user is done with it (Return, or leaving
// the field), not at each keystroke; no field has a button of its own. Two rows do more here
// than save (effects): the listen address moves the running relay, and the local key is shown
// once when it is made.
type settingsWindow struct {
	u   *UI
	win fyne.Window

	// fields are the window's fields by setting, in the table's order.
	fields map[app.SettingName]*settingField
	order  []*settingField

	keyShown *widget.Entry
	keyBox   *fyne.Container

	// loaded is the settings generation the fields show.
	loaded uint64
	// offer is the dialog last shown after the local key was turned on (tests).
	offer *dialog.ConfirmDialog
	// codexUndo undoes the Codex configuration, after undoAsk; codexUndone says what it did
	// (codexundo.go).
	codexUndo   *widget.Button
	undoAsk     *dialog.ConfirmDialog
	codexUndone *widget.Label
}

// settingField is the field of one setting: the widget its kind draws and the line under it
// for what went wrong.
type settingField struct {
	row    app.Setting
	check  *widget.Check  // app.SettingBool
	choice *widget.Select // app.SettingChoice
	entry  *numberEntry   // app.SettingNumber and app.SettingText
	msg    *widget.Label
	// unit is the number's unit after the field, and scale how many of the setting's own units
	// one of it is: the row's, or the setting's own when the value is no whole number of the
	// row's (fieldScale).
	unit  *widget.Label
	scale int64
}

// strategyNotes explain each routing strategy in one line.
var strategyNotes = map[string]string{
	proxy.StrategyPriority:      "the first healthy account in the list takes every request; the next only when it fails, reaches its limit or rests.",
	proxy.StrategyRoundRobin:    "the healthy accounts take turns, in list order.",
	proxy.StrategyMostQuotaLeft: "untouched accounts first, then the ChatGPT accounts with the most of their windows left.",
	app.StrategyResetFirst:      "the account whose binding window resets soonest first, while it has quota left (it would expire unused); accounts whose reset is unknown after them.",
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

// build lays out every row of the settings table under its section.
func (s *settingsWindow) build() fyne.CanvasObject {
	s.fields = map[app.SettingName]*settingField{}
	s.buildKeyBox()
	content := container.NewVBox(
		// One way for every field, said once: a demanding user expects a settings window to
		// keep what they change without a button to find (only the port had Apply).
		hint("Every change is saved as you make it: a choice at once, a number when you press Return or leave its field."))
	for i, section := range app.SettingSections {
		if i > 0 {
			content.Add(widget.NewSeparator())
		}
		content.Add(heading(section))
		content.Add(s.section(section))
	}
	content.Add(widget.NewSeparator())
	content.Add(heading("Codex"))
	content.Add(s.codexSection())
	return container.NewVScroll(container.NewPadded(content))
}

// section is the fields of the rows in section: check boxes on lines of their own, the
// others in a form of labels and fields.
func (s *settingsWindow) section(section string) fyne.CanvasObject {
	box := container.NewVBox()
	var form []fyne.CanvasObject
	flush := func() {
		if len(form) > 0 {
			box.Add(container.New(layout.NewFormLayout(), form...))
			form = nil
		}
	}
	for _, st := range app.SettingsTable {
		if st.Section != section {
			continue
		}
		f := s.newField(st)
		if f.check != nil {
			flush()
			box.Add(f.check)
			if st.Name == app.SettingLocalAPIKey {
				box.Add(s.keyBox)
			}
			box.Add(f.msg)
			continue
		}
		parts := []fyne.CanvasObject{f.control()}
		if h := windowHint(st); h != "" {
			parts = append(parts, hint(h))
		}
		form = append(form, widget.NewLabel(fieldLabel(st)), container.NewVBox(append(parts, f.msg)...))
	}
	flush()
	return box
}

// newField makes the field of st, as its kind draws it, and wires it to save.
func (s *settingsWindow) newField(st app.Setting) *settingField {
	f := &settingField{row: st, msg: errorLabel()}
	switch st.Kind {
	case app.SettingBool:
		f.check = widget.NewCheck(st.Label, nil)
	case app.SettingChoice:
		f.choice = widget.NewSelect(st.Choices, nil)
	default:
		f.entry = newNumberEntry()
		f.entry.onDone = func() { s.apply(f, f.entry.Text) }
	}
	s.fields[st.Name] = f
	s.order = append(s.order, f)
	return f
}

// control is the field's widget, with its unit after it.
func (f *settingField) control() fyne.CanvasObject {
	switch {
	case f.choice != nil:
		return f.choice
	case f.row.Unit != "":
		f.unit = widget.NewLabel(f.row.Unit)
		return container.NewBorder(nil, nil, nil, f.unit, f.entry)
	}
	return f.entry
}

// fieldLabel is the label beside a field: the listen address is edited as its port.
func fieldLabel(st app.Setting) string {
	if st.Name == app.SettingListen {
		return "Listen port"
	}
	return st.Label
}

// windowHint is the line under a field: the row's help where it speaks in the field's own unit,
// the strategies explained one a line.
func windowHint(st app.Setting) string {
	switch {
	case st.Name == app.SettingListen:
		return "e.g. 7455; from 1024 to 65535"
	case st.Name == app.SettingStrategy:
		var explain []string
		for _, name := range st.Choices {
			explain = append(explain, name+": "+strategyNotes[name])
		}
		return strings.Join(explain, "\n")
	case st.Kind == app.SettingChoice || (st.Kind == app.SettingNumber && st.Scale <= 1 && st.Section != app.SectionNotify):
		return st.Help
	}
	return ""
}

// buildKeyBox makes the box that shows a local key once, when it is made.
func (s *settingsWindow) buildKeyBox() {
	s.keyShown = widget.NewEntry()
	passScroll(s.keyShown)
	s.keyShown.TextStyle.Monospace = true
	s.keyShown.Disable()
	copyKey := widget.NewButtonWithIcon("Copy", theme.ContentCopyIcon(), func() { s.u.copyText(s.keyShown.Text) })
	s.keyBox = container.NewVBox(
		container.NewBorder(nil, nil, nil, copyKey, s.keyShown),
		note("Shown once: copy it now. Clients send it as \"Authorization: Bearer <key>\"; turning the key off and on makes a new one."))
	s.keyBox.Hide()
}

// passScroll makes a one-line field leave the mouse wheel to the window: a field scrolls its own
// text by default, and so took the wheel wherever the pointer was over one (the fields span the
// window's width). Its values are short (a port, a number, the local key), shown whole.
func passScroll(e *widget.Entry) {
	e.Wrapping = fyne.TextWrapOff
	e.Scroll = fyne.ScrollNone
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
// overrides) as each row shows them, without applying anything.
func (s *settingsWindow) load() {
	s.loaded = s.u.store.Settings().Generation
	// The tray's relay's catalog figures, as the poller last read them over the local API (off
	// the UI thread: a tray that is slow to answer never holds the window up).
	catalog := s.u.last.snap.Catalog
	focused := s.win.Canvas().Focused()
	for _, f := range s.order {
		v := liveValue(f.row, catalog, s.u.store)
		switch {
		case f.check != nil:
			on, _ := strconv.ParseBool(v)
			setCheck(f.check, on)
		case f.choice != nil:
			f.choice.OnChanged = nil
			f.choice.SetSelected(v)
		case focused != f.entry: // never under the user's fingers
			f.scale = fieldScale(f.row, v)
			if f.unit != nil {
				setText(f.unit, fieldUnit(f.row, f.scale))
			}
			f.entry.show(windowValue(f.row, v))
		}
	}
	s.attach()
}

// liveValue is the value of st in force: the catalog's as the running relay has it (the
// environment's overrides included), any other as its row shows it. A snapshot without
// catalog figures (the tray did not answer, or prepared figures that have none) leaves the
// catalog to its rows too: what a relay started now would use.
func liveValue(st app.Setting, c proxy.CatalogStats, store *app.App) string {
	if c.TTLMs == 0 {
		return st.Show(store)
	}
	switch st.Name {
	case app.SettingSWR:
		return strconv.FormatBool(c.SWREnabled)
	case app.SettingStaleMaxAge:
		return strconv.FormatInt(c.StaleMaxAgeMs, 10)
	case app.SettingTTL:
		return strconv.FormatInt(c.TTLMs, 10)
	}
	return st.Show(store)
}

// windowValue is v, the setting's value as its row shows it, in the field's terms: a number in
// the field's unit, the listen address's port.
func windowValue(st app.Setting, v string) string {
	switch {
	case st.Name == app.SettingListen:
		if _, port, err := net.SplitHostPort(v); err == nil {
			return port
		}
	case st.Kind == app.SettingNumber && st.Scale > 1:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return strconv.FormatInt(n/fieldScale(st, v), 10)
		}
	}
	return v
}

// fineUnit is the own unit of the settings a row shows in a coarser one (every such row counts
// milliseconds: the timeouts, the catalog's ages).
const fineUnit = "ms"

// fieldScale is how many of the setting's own units one of the field's is for the value v: the
// row's Scale, unless v is no whole number of the row's unit (a TTL of 1000 ms set from the
// command line read "0 min"), then 1, and the field shows v in the setting's own unit.
func fieldScale(st app.Setting, v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if st.Scale <= 1 || err == nil && n%st.Scale != 0 {
		return 1
	}
	return st.Scale
}

// fieldUnit is the unit the field shows a number in at scale.
func fieldUnit(st app.Setting, scale int64) string {
	if st.Scale > 1 && scale == 1 {
		return fineUnit
	}
	return st.Unit
}

// attach wires the check boxes and choices to save (load sets them without saving).
func (s *settingsWindow) attach() {
	for _, f := range s.order {
		switch {
		case f.check != nil:
			f.check.OnChanged = func(on bool) { s.apply(f, strconv.FormatBool(on)) }
		case f.choice != nil:
			f.choice.OnChanged = func(v string) { s.apply(f, v) }
		}
	}
}

// sync follows changes made elsewhere (the tray, the CLI, another process) each tick.
func (s *settingsWindow) sync(v view) {
	if v.snap.SettingsGeneration != s.loaded {
		s.load()
		return
	}
	if f, on := s.fields[app.SettingSWR], v.snap.Catalog.SWREnabled; v.snap.Catalog.TTLMs != 0 && f.check.Checked != on {
		setCheck(f.check, on)
	}
}

// setCheck changes a check box without running its OnChanged.
func setCheck(c *widget.Check, on bool) {
	c.Checked = on
	c.Refresh()
}

// apply saves the field's text through its row, or the row's effect here.
func (s *settingsWindow) apply(f *settingField, text string) {
	text = strings.TrimSpace(text)
	switch f.row.Name {
	case app.SettingListen:
		s.applyPort(f)
		return
	case app.SettingLocalAPIKey:
		s.applyLocalKey(f, text == "true")
		return
	}
	v, err := settingValue(f.row, f.scale, text)
	var set func(*app.App) error
	if err == nil {
		set, err = f.row.Parse(v)
	}
	if err != nil {
		setError(f.msg, err)
		f.revert(text)
		return
	}
	s.save(func() error { return set(s.u.store) }, func(err error) {
		s.showError(f, err)
		if err != nil {
			f.revert(text)
		} else if f.row.Name == app.SettingSWR {
			s.u.refresh()
		}
	})
}

// settingValue is the setting's value for text typed in its field: a number in the field's
// unit times its scale, refused in the field's unit when the row would refuse it.
func settingValue(st app.Setting, scale int64, text string) (string, error) {
	if st.Kind != app.SettingNumber {
		return text, nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%q is not a whole number", text)
	}
	if scale > 1 {
		if n < 1 && st.Check("0") != nil {
			return "", fmt.Errorf("enter at least 1 %s", st.Unit)
		}
		n *= scale
	}
	return strconv.FormatInt(n, 10), nil
}

// revert puts a check box the row refused back as it was.
func (f *settingField) revert(text string) {
	if f.check != nil {
		setCheck(f.check, text != "true")
	}
}

// showError shows err under the field it names (the stale age refused for a new TTL), else
// under f; a success clears f's line.
func (s *settingsWindow) showError(f *settingField, err error) {
	if g := s.fields[app.SettingName(fieldOf(err))]; err != nil && g != nil {
		f = g
	}
	setError(f.msg, err)
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

// applyPort is the listen address's effect: it moves the proxy to the typed port: Service.SetListen checks the new port, then
// restarts the listener on it (keeping the old one if the new one cannot be opened).
func (s *settingsWindow) applyPort(f *settingField) {
	msg := f.msg
	port, err := parsePort(f.entry.Text)
	if err != nil {
		setError(msg, err)
		return
	}
	host, _, err := net.SplitHostPort(s.u.store.ListenAddr())
	if err != nil {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if err := f.row.Check(addr); err != nil {
		setError(msg, err)
		return
	}
	setMessage(msg, "Restarting the proxy on "+addr+"…", widget.MediumImportance)
	s.u.async(func() {
		err := s.u.ctl.SetListen(addr)
		fyne.Do(func() {
			switch {
			case err != nil:
				setError(msg, err)
			case s.u.store.ListenAddr() != addr:
				setMessage(msg, "Saved, but CODEXRELAY_LISTEN="+s.u.store.ListenAddr()+
					" overrides it while that variable is set.", widget.WarningImportance)
			default:
				setMessage(msg, "Listening on http://"+s.u.ctl.Status().Addr+"/v1. Codex needs the new "+
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

// applyLocalKey is the local key's effect: the key made is shown once, and Codex, when it uses
// the relay, is offered the key.
func (s *settingsWindow) applyLocalKey(f *settingField, on bool) {
	msg := f.msg
	f.check.Disable()
	s.u.async(func() {
		// Whether Codex sends its requests through the relay now, before the key changes that.
		configured := s.u.codexConfigured().Configured
		key, err := s.u.store.SetLocalKey(on)
		fyne.Do(func() {
			f.check.Enable()
			if err != nil {
				setCheck(f.check, !on)
				if isKeychainError(err) {
					s.u.showError(s.win, err)
				}
				setError(msg, err)
				return
			}
			setError(msg, nil)
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
				s.offerCodexConfig(msg)
			}
		})
	})
}

// offerCodexConfig offers, once the local key is on and when Codex was configured for the
// relay, to make Codex send it: the provider block then carries the key itself
// (experimental_bearer_token), so that every Codex front end sends it without an environment
// variable (the desktop app and the IDE extensions do not inherit a shell's).
func (s *settingsWindow) offerCodexConfig(line *widget.Label) {
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
				res, err := s.u.store.WriteCodexConfig("")
				fyne.Do(func() {
					if err != nil {
						setError(line, fmt.Errorf("could not update the Codex configuration: %w", err))
						return
					}
					setMessage(line, configText(res)+" Codex sends the key from now on.",
						widget.SuccessImportance)
					s.u.changed()
				})
			})
		}, s.win)
	s.offer.Show()
}

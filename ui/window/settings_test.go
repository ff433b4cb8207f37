package window

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

func TestSettingsToggleStaleWhileRevalidate(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.refresh()
	u.showSettings()
	s := u.settings
	if !s.checkOf(app.SettingSWR).Checked {
		t.Fatal("the check should show the live setting (on)")
	}
	test.Tap(s.checkOf(app.SettingSWR))
	if relay.Proxy.Stats().Catalog.SWREnabled {
		t.Fatal("unchecking did not turn stale-while-revalidate off in the proxy")
	}
	test.Tap(s.checkOf(app.SettingSWR))
	if !relay.Proxy.Stats().Catalog.SWREnabled {
		t.Fatal("checking did not turn it on again")
	}

	// A change from elsewhere (the CLI, another process) shows in the open window at the next tick.
	if err := relay.Set(app.SettingSWR, "false"); err != nil {
		t.Fatal(err)
	}
	u.refresh()
	if s.checkOf(app.SettingSWR).Checked {
		t.Error("the settings window did not follow the tray's change")
	}
}

func TestSettingsRejectBadPorts(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.refresh()
	u.showSettings()
	s := u.settings
	if s.entryOf(app.SettingListen).Text != "7455" {
		t.Fatalf("port field %q", s.entryOf(app.SettingListen).Text)
	}
	for _, c := range []struct{ in, msg string }{
		{"80", "out of range"},
		{"1455", "Codex sign-in callback"},
		{"70000", "out of range"},
		{"abc", "not a port number"},
		{"", "not a port number"},
	} {
		enter(s.entryOf(app.SettingListen), c.in)
		if !s.msgOf(app.SettingListen).Visible() || !strings.Contains(s.msgOf(app.SettingListen).Text, c.msg) {
			t.Errorf("port %q: message %q (visible %v), want %q", c.in, s.msgOf(app.SettingListen).Text, s.msgOf(app.SettingListen).Visible(), c.msg)
		}
		mustContain(t, s.win.Content(), c.msg)
	}
	if relay.Settings().Listen != "" || u.svc.Status().Running {
		t.Errorf("a rejected port changed something: %q %+v", relay.Settings().Listen, u.svc.Status())
	}
}

func TestSettingsMovePort(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	// A port that is free now: open and close a listener on port 0 to learn one.
	ln, err := relay.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().String()[len("127.0.0.1:"):]
	ln.Close()
	// Saved as the focus leaves the field, as every number of the window is: no Apply button.
	s.win.Canvas().Focus(s.entryOf(app.SettingListen))
	s.entryOf(app.SettingListen).SetText(port)
	s.win.Canvas().Unfocus()
	if got := relay.Settings().Listen; got != "127.0.0.1:"+port {
		t.Fatalf("saved listen %q (message %q)", got, s.msgOf(app.SettingListen).Text)
	}
	if !u.svc.Status().Running || !strings.Contains(s.msgOf(app.SettingListen).Text, "Listening on http://127.0.0.1:"+port) {
		t.Errorf("status %+v, message %q", u.svc.Status(), s.msgOf(app.SettingListen).Text)
	}
}

func TestSettingsCatalogAndStrategy(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	if s.entryOf(app.SettingTTL).Text != "10" || s.entryOf(app.SettingStaleMaxAge).Text != "30" {
		t.Fatalf("catalog fields %q %q", s.entryOf(app.SettingTTL).Text, s.entryOf(app.SettingStaleMaxAge).Text)
	}
	enter(s.entryOf(app.SettingTTL), "0")
	if !s.msgOf(app.SettingTTL).Visible() || s.msgOf(app.SettingStaleMaxAge).Visible() {
		t.Errorf("TTL 0: message %q under the TTL, %q under the stale age", s.msgOf(app.SettingTTL).Text, s.msgOf(app.SettingStaleMaxAge).Text)
	}
	enter(s.entryOf(app.SettingTTL), "5")
	enter(s.entryOf(app.SettingStaleMaxAge), "45")
	c := relay.Proxy.Stats().Catalog
	if c.TTLMs != 300_000 || c.StaleMaxAgeMs != 2_700_000 || s.msgOf(app.SettingTTL).Visible() || s.msgOf(app.SettingStaleMaxAge).Visible() {
		t.Errorf("catalog %d ms / %d ms, messages %q %q", c.TTLMs, c.StaleMaxAgeMs, s.msgOf(app.SettingTTL).Text, s.msgOf(app.SettingStaleMaxAge).Text)
	}
	// A stale age below the TTL: app refuses it, and says so under the stale age.
	enter(s.entryOf(app.SettingStaleMaxAge), "3")
	err := relay.Set(app.SettingStaleMaxAge, "180000")
	if err == nil || fieldOf(err) != string(app.SettingStaleMaxAge) {
		t.Fatalf("app accepted a stale age below the TTL: %v", err)
	}
	if !s.msgOf(app.SettingStaleMaxAge).Visible() || s.msgOf(app.SettingStaleMaxAge).Text != sentence(fieldWords(err)) {
		t.Errorf("stale age message %q, want app's %q", s.msgOf(app.SettingStaleMaxAge).Text, err.Error())
	}
	if relay.Proxy.Stats().Catalog.StaleMaxAgeMs != 2_700_000 {
		t.Error("a refused stale age was applied")
	}

	// The strategy select offers the four strategies, each explained in one line.
	if !slices.Equal(s.choiceOf(app.SettingStrategy).Options, []string{proxy.StrategyPriority, proxy.StrategyRoundRobin, proxy.StrategyMostQuotaLeft, app.StrategyResetFirst}) {
		t.Errorf("strategies %q", s.choiceOf(app.SettingStrategy).Options)
	}
	for _, st := range proxy.Strategies {
		mustContain(t, s.win.Content(), st+": "+strategyNotes[st])
	}
	if s.choiceOf(app.SettingStrategy).Selected != proxy.StrategyPriority {
		t.Fatalf("strategy %q", s.choiceOf(app.SettingStrategy).Selected)
	}
	for _, st := range []string{proxy.StrategyMostQuotaLeft, proxy.StrategyRoundRobin} {
		s.choiceOf(app.SettingStrategy).SetSelected(st)
		if got := relay.Settings().Strategy; got != st {
			t.Errorf("strategy saved as %q, want %q", got, st)
		}
	}
}

func TestSettingsTimeouts(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	if got := s.entryOf(app.TimeoutHeader.Setting()).Text; got != "60" {
		t.Fatalf("header timeout %q", got)
	}
	// Typing saves nothing; leaving the field saves it.
	e := s.entryOf(app.TimeoutFirstEvent.Setting())
	s.win.Canvas().Focus(e)
	e.SetText("4")
	e.SetText("45")
	if got := relay.Settings().Timeouts.FirstEventMs; got != 0 {
		t.Errorf("saved %d ms while typing", got)
	}
	gen := relay.Settings().Generation
	s.win.Canvas().Unfocus()
	if got := relay.Settings().Timeouts.FirstEventMs; got != 45_000 {
		t.Errorf("first-event timeout saved as %d ms", got)
	}
	// Return saves too, but only a changed value.
	s.win.Canvas().Focus(e)
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
	s.win.Canvas().Unfocus()
	if got := relay.Settings().Generation; got != gen+1 {
		t.Errorf("an unchanged field was saved again: generation %d, want %d", got, gen+1)
	}
	enter(s.entryOf(app.TimeoutStreamIdle.Setting()), "x")
	if !s.msgOf(app.TimeoutStreamIdle.Setting()).Visible() {
		t.Error("no message for a timeout that is not a number")
	}
}

// enter types text into a number field and presses Return.
func enter(e *numberEntry, text string) {
	e.SetText(text)
	e.TypedKey(&fyne.KeyEvent{Name: fyne.KeyReturn})
}

// Every change saves off the UI thread: the settings file's lock may be held by another
// process for seconds. Here async only queues, so nothing is saved until the test runs it.
func TestSettingsSaveOffTheUIThread(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.refresh()
	u.showSettings()
	s := u.settings
	var queued []func()
	u.async = func(f func()) { queued = append(queued, f) }
	runQueued := func(what string, saved func() bool) {
		t.Helper()
		if saved() {
			t.Fatalf("%s: saved on the UI thread", what)
		}
		if len(queued) != 1 {
			t.Fatalf("%s: %d calls queued, want 1", what, len(queued))
		}
		f := queued[0]
		queued = nil
		f()
		if !saved() {
			t.Errorf("%s: not saved once its call ran", what)
		}
	}
	s.choiceOf(app.SettingStrategy).SetSelected(proxy.StrategyRoundRobin)
	runQueued("strategy", func() bool { return relay.Settings().Strategy == proxy.StrategyRoundRobin })
	test.Tap(s.checkOf(app.NotifySetting(app.NotifyLimit)))
	runQueued("notification", func() bool { return !relay.Settings().Notifications.Enabled(app.NotifyLimit) })
	enter(s.entryOf(app.SettingLowCapacity), "30")
	runQueued("threshold", func() bool { return relay.Settings().Notifications.Threshold() == 30 })
	enter(s.entryOf(app.TimeoutHeader.Setting()), "90")
	runQueued("timeout", func() bool { return relay.Settings().Timeouts.HeaderMs == 90_000 })
	enter(s.entryOf(app.SettingTTL), "20")
	enter(s.entryOf(app.SettingStaleMaxAge), "40")
	queued[0]() // the TTL's save, with the stale age still 30
	queued = queued[1:]
	runQueued("catalog timing", func() bool { return relay.Proxy.Stats().Catalog.StaleMaxAgeMs == 2_400_000 })
	test.Tap(s.checkOf(app.SettingSWR))
	runQueued("stale-while-revalidate", func() bool { return !relay.Proxy.Stats().Catalog.SWREnabled })
	test.Tap(s.checkOf(app.SettingSWR))
	runQueued("stale-while-revalidate again", func() bool { return relay.Proxy.Stats().Catalog.SWREnabled })
	if !s.checkOf(app.SettingSWR).Checked {
		t.Error("the check does not follow its change")
	}
}

func TestSettingsNotifications(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	for _, kind := range app.NotifyKinds {
		if s.fields[app.NotifySetting(kind)] == nil || s.checkOf(app.NotifySetting(kind)) == nil {
			t.Fatalf("no notification check for %s", kind)
		}
		if !s.checkOf(app.NotifySetting(kind)).Checked {
			t.Errorf("%s starts off", kind)
		}
		if s.checkOf(app.NotifySetting(kind)).Text != label(app.NotifySetting(kind)) || label(app.NotifySetting(kind)) == "" {
			t.Errorf("%s: check %q", kind, s.checkOf(app.NotifySetting(kind)).Text)
		}
	}
	test.Tap(s.checkOf(app.NotifySetting(app.NotifyWindowReset)))
	if relay.Settings().Notifications.Enabled(app.NotifyWindowReset) {
		t.Error("unchecking did not turn window-reset notifications off")
	}
	if s.entryOf(app.SettingLowCapacity).Text != "20" {
		t.Errorf("threshold %q", s.entryOf(app.SettingLowCapacity).Text)
	}
	enter(s.entryOf(app.SettingLowCapacity), "35")
	if got := relay.Settings().Notifications.Threshold(); got != 35 {
		t.Errorf("threshold saved as %d", got)
	}
	enter(s.entryOf(app.SettingLowCapacity), "100")
	if !s.msgOf(app.SettingLowCapacity).Visible() || !strings.Contains(s.msgOf(app.SettingLowCapacity).Text, "1 to 99") {
		t.Errorf("threshold 100: %q", s.msgOf(app.SettingLowCapacity).Text)
	}
}

func TestSettingsLocalKeyShownOnce(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	// Codex sends its requests through the relay: the key would lock it out.
	if _, err := relay.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	u.showSettings()
	s := u.settings
	test.Tap(s.checkOf(app.SettingLocalAPIKey))
	key, err := relay.LocalKey()
	if err != nil || key == "" {
		t.Fatalf("local key %q, %v (message %q)", key, err, s.msgOf(app.SettingLocalAPIKey).Text)
	}
	if !s.keyBox.Visible() || s.keyShown.Text != key {
		t.Fatal("the new key is not shown")
	}
	// It offers to make Codex send the key, and says how Codex gets it.
	got := overlayTexts(t, s.win)
	for _, want := range []string{"experimental_bearer_token", "no environment variable", "Update config.toml", "Not now"} {
		if !strings.Contains(got, want) {
			t.Errorf("the offer does not say %q:\n%s", want, got)
		}
	}
	tapButton(t, s.win.Canvas().Overlays().Top(), "Update config.toml")
	b, err := os.ReadFile(filepath.Join(relay.CodexHome(), "config.toml"))
	if err != nil || !strings.Contains(string(b), `experimental_bearer_token = "`+key+`"`) || strings.Contains(string(b), "env_key") {
		t.Errorf("config.toml does not carry the key (%v)", err)
	}
	if !strings.Contains(s.msgOf(app.SettingLocalAPIKey).Text, "Codex sends the key") {
		t.Errorf("message %q", s.msgOf(app.SettingLocalAPIKey).Text)
	}
	tapButton(t, s.keyBox, "Copy")
	if u.fa.Clipboard().Content() != key {
		t.Error("Copy did not copy the key")
	}
	// The settings follow the change at the next tick; the key stays shown meanwhile.
	u.refresh()
	if !s.keyBox.Visible() || s.keyShown.Text != key {
		t.Error("the key went away while the window stayed open")
	}
	// Closed and opened again, the window does not show the key again.
	s.win.Hide()
	u.showSettings()
	if s.keyBox.Visible() || s.keyShown.Text != "" {
		t.Errorf("the key shows again when the window opens again (%q)", s.keyShown.Text)
	}
	for _, txt := range texts(s.win.Content()) {
		if strings.Contains(txt, key) {
			t.Errorf("%q shows the key", txt)
		}
	}
	test.Tap(s.checkOf(app.SettingLocalAPIKey))
	if relay.Settings().LocalAPIKey || s.keyBox.Visible() {
		t.Error("turning the key off left it on or shown")
	}
}

// Where Codex does not send its requests through the relay, turning the local key on leaves
// its configuration alone: writing it would make the relay Codex's provider.
func TestSettingsLocalKeyLeavesAnUnrelatedCodexAlone(t *testing.T) {
	uitest.NeedKeyring(t)
	u, relay := newTestUI(t, nil)
	path := filepath.Join(relay.CodexHome(), "config.toml")
	if err := os.WriteFile(path, []byte("model_provider = \"openai\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u.showSettings()
	s := u.settings
	test.Tap(s.checkOf(app.SettingLocalAPIKey))
	if !relay.Settings().LocalAPIKey || !s.keyBox.Visible() {
		t.Fatalf("the key is not on (message %q)", s.msgOf(app.SettingLocalAPIKey).Text)
	}
	if top := s.win.Canvas().Overlays().Top(); top != nil {
		t.Errorf("an offer shows although Codex does not use the relay:\n%s", strings.Join(texts(top), "\n"))
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "model_provider = \"openai\"\n" {
		t.Errorf("config.toml changed:\n%s (%v)", b, err)
	}
}

func TestSettingsStartAtLogin(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	test.Tap(s.checkOf(app.SettingStartAtLogin))
	if s.msgOf(app.SettingStartAtLogin).Visible() {
		// Where the platform has no login items the error shows and the box unticks.
		if s.checkOf(app.SettingStartAtLogin).Checked || relay.Settings().StartAtLogin {
			t.Errorf("failed (%q) but stays on", s.msgOf(app.SettingStartAtLogin).Text)
		}
		return
	}
	if !relay.Settings().StartAtLogin {
		t.Fatal("start at login not saved")
	}
	test.Tap(s.checkOf(app.SettingStartAtLogin))
	if relay.Settings().StartAtLogin || s.msgOf(app.SettingStartAtLogin).Visible() {
		t.Errorf("turning it off: %v %q", relay.Settings().StartAtLogin, s.msgOf(app.SettingStartAtLogin).Text)
	}
}

// The pool's fields are read, checked and saved through the settings table, as `settings set`
// is: the hold takes -1 (never) and refuses what the table refuses; the reset-credits policy
// saves what is chosen.
func TestSettingsPoolFieldsComeFromTheTable(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	if got := s.entryOf(app.SettingHold).Text; got != "30" {
		t.Fatalf("hold %q", got)
	}
	if got := s.choiceOf(app.SettingResetCredits).Selected; got != proxy.ResetCreditsAsk {
		t.Fatalf("reset-credits %q", got)
	}
	enter(s.entryOf(app.SettingHold), "-1")
	if got := relay.Settings().HoldSeconds; got != -1 || s.msgOf(app.SettingHold).Visible() {
		t.Errorf("hold saved as %d (message shown %v)", got, s.msgOf(app.SettingHold).Visible())
	}
	enter(s.entryOf(app.SettingHold), "99999")
	if got := relay.Settings().HoldSeconds; got != -1 || !s.msgOf(app.SettingHold).Visible() || !strings.Contains(s.msgOf(app.SettingHold).Text, "3600") {
		t.Errorf("out of range: saved %d, message %q", got, s.msgOf(app.SettingHold).Text)
	}
	// The message names the field by its label, never by its command-line key (issue 32 Low).
	if want := "“" + label(app.SettingHold) + "” must be"; !strings.HasPrefix(s.msgOf(app.SettingHold).Text, want) ||
		strings.Contains(strings.ToLower(s.msgOf(app.SettingHold).Text), "hold-seconds") {
		t.Errorf("out of range: message %q, want it to start %q", s.msgOf(app.SettingHold).Text, want)
	}
	s.choiceOf(app.SettingResetCredits).SetSelected(proxy.ResetCreditsAuto)
	if got := relay.Settings().ResetCredits; got != proxy.ResetCreditsAuto {
		t.Errorf("reset-credits saved as %q", got)
	}
}

// The Settings window scrolls with the pointer over a field, as over a label: the fields span
// the window's width, and a field that took the wheel for itself left most of the window
// unscrollable.
func TestSettingsScrollsOverAField(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	s.win.Resize(fyne.NewSize(680, 400))
	scroll, ok := s.win.Content().(*container.Scroll)
	if !ok {
		t.Fatalf("the window's content is a %T, not a scroll container", s.win.Content())
	}
	for _, field := range []fyne.CanvasObject{s.choiceOf(app.SettingStrategy), s.entryOf(app.SettingListen), s.entryOf(app.SettingStaleMaxAge)} { // the strategy's Select: a control
		scroll.ScrollToTop()
		pos := fyne.CurrentApp().Driver().AbsolutePositionForObject(field).Add(fyne.NewPos(10, 10))
		test.Scroll(s.win.Canvas(), pos, 0, -60)
		if scroll.Offset.Y == 0 {
			t.Errorf("a wheel over the %T at %v did not scroll the window", field, pos)
		}
	}
}

// Every field saves the same way, said once at the top: no field has a button of its own (issue
// 32 Low: only the port had Apply, while the other numbers saved as the focus left them). The
// Codex section's action is no field.
func TestSettingsSaveOneWay(t *testing.T) {
	u, _ := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	visit(s.win.Content(), func(o fyne.CanvasObject) {
		if b, ok := o.(*widget.Button); ok && b.Visible() && b.Text != "Copy" && b != s.codexUndo {
			t.Errorf("the settings window has a %q button", b.Text)
		}
	})
	mustContain(t, s.win.Content(), "Every change is saved as you make it")
}

// The fields of the settings window by setting, as the table's rows made them.
func (s *settingsWindow) checkOf(n app.SettingName) *widget.Check   { return s.fields[n].check }
func (s *settingsWindow) choiceOf(n app.SettingName) *widget.Select { return s.fields[n].choice }
func (s *settingsWindow) entryOf(n app.SettingName) *numberEntry    { return s.fields[n].entry }
func (s *settingsWindow) msgOf(n app.SettingName) *widget.Label     { return s.fields[n].msg }

// The window is the settings table: every row has its field, drawn by its kind under its
// section, showing what the row shows; a setting the window has no code of its own for saves
// and refuses through its row (issue 31: a new setting is its field, its row and its effect).
func TestSettingsWindowIsTheTable(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	for _, st := range app.SettingsTable {
		f := s.fields[st.Name]
		if f == nil {
			t.Errorf("%s has no field in the window", st.Name)
			continue
		}
		want := st.Show(relay.App)
		switch st.Kind {
		case app.SettingBool:
			if f.check == nil || strconv.FormatBool(f.check.Checked) != want {
				t.Errorf("%s: check box %v, want %s", st.Name, f.check, want)
			}
		case app.SettingChoice:
			if f.choice == nil || f.choice.Selected != want || !slices.Equal(f.choice.Options, st.Choices) {
				t.Errorf("%s: choice %v, want %s of %q", st.Name, f.choice, want, st.Choices)
			}
		default:
			if f.entry == nil || f.entry.Text != windowValue(st, want) {
				t.Errorf("%s: field %v, want %s", st.Name, f.entry, windowValue(st, want))
			}
		}
	}
	for _, section := range app.SettingSections {
		mustContain(t, s.win.Content(), section)
	}
	enter(s.entryOf(app.SettingUsageRetentionDays), "30")
	if got := relay.Settings().Usage.RetentionDays; got != 30 || s.msgOf(app.SettingUsageRetentionDays).Visible() {
		t.Errorf("retention saved as %d (message %q)", got, s.msgOf(app.SettingUsageRetentionDays).Text)
	}
	enter(s.entryOf(app.SettingUsageRetentionDays), "-3")
	if got := relay.Settings().Usage.RetentionDays; got != 30 || !strings.Contains(s.msgOf(app.SettingUsageRetentionDays).Text, "number of days") {
		t.Errorf("-3 days: saved %d, message %q", got, s.msgOf(app.SettingUsageRetentionDays).Text)
	}
	test.Tap(s.checkOf(app.SettingUsageLedger))
	if !relay.Settings().Usage.Off {
		t.Error("unchecking the usage ledger did not turn it off")
	}
}

// A snapshot without catalog figures (the tray did not answer) leaves the catalog fields to
// their rows, and the once-a-second follow leaves stale-while-revalidate alone, instead of
// showing the catalog off with a zero TTL.
func TestSettingsWithoutTheTraysCatalogFigures(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.src = source.Fixed{}
	u.showSettings()
	s := u.settings
	if !s.checkOf(app.SettingSWR).Checked || s.entryOf(app.SettingTTL).Text != "10" || s.entryOf(app.SettingStaleMaxAge).Text != "30" {
		t.Errorf("catalog shown as %v, TTL %q, stale age %q", s.checkOf(app.SettingSWR).Checked,
			s.entryOf(app.SettingTTL).Text, s.entryOf(app.SettingStaleMaxAge).Text)
	}
	s.sync(view{snap: proxy.Snapshot{SettingsGeneration: relay.Settings().Generation}})
	if !s.checkOf(app.SettingSWR).Checked {
		t.Error("a tick without catalog figures unchecked stale-while-revalidate")
	}
}

// The Settings window undoes the Codex configuration (as `codex-config --remove` does), after
// asking, and says what it changed in each file; config.toml goes back to what it was.
func TestSettingsStopsUsingTheRelayInCodex(t *testing.T) {
	u, relay := newTestUI(t, nil)
	cfg := filepath.Join(relay.CodexHome(), "config.toml")
	os.WriteFile(cfg, []byte("model_provider = \"mine\"\n\n[model_providers.mine]\nbase_url = \"http://127.0.0.1:9/v1\"\n"), 0o600)
	if _, err := relay.WriteCodexConfig(""); err != nil {
		t.Fatal(err)
	}
	u.showSettings()
	s := u.settings
	mustContain(t, s.win.Content(), "Do it before you uninstall Codex Relay")
	test.Tap(s.codexUndo)
	got := overlayTexts(t, s.win)
	if !strings.Contains(got, "Stop using the relay") || !strings.Contains(got, "Cancel") {
		t.Fatalf("the question:\n%s", got)
	}
	tapButton(t, s.win.Canvas().Overlays().Top(), "Stop using the relay")
	b, _ := os.ReadFile(cfg)
	if string(b) != "model_provider = \"mine\"\n\n[model_providers.mine]\nbase_url = \"http://127.0.0.1:9/v1\"\n" {
		t.Fatalf("config.toml after the undo:\n%s", b)
	}
	if msg := s.codexUndone.Text; !strings.Contains(msg, `model_provider is "mine" again`) || !strings.Contains(msg, ".env, which Codex Relay had created") {
		t.Fatalf("it says %q", msg)
	}
	// Again: nothing to undo, and it says so.
	test.Tap(s.codexUndo)
	tapButton(t, s.win.Canvas().Overlays().Top(), "Stop using the relay")
	if msg := s.codexUndone.Text; !strings.HasPrefix(msg, "Nothing to undo") {
		t.Fatalf("it says %q", msg)
	}
}

// A value that is no whole number of the field's unit (a TTL of 1000 ms set from the command
// line, which read "0 min") shows in milliseconds, and what is typed there is taken in them;
// a whole number of minutes shows in minutes again.
func TestSettingsShowsAFineValueInItsOwnUnit(t *testing.T) {
	u, relay := newTestUI(t, nil)
	set, err := row(app.SettingTTL).Parse("1000")
	if err != nil || set(relay.App) != nil {
		t.Fatal(err)
	}
	u.showSettings()
	s := u.settings
	f := s.fields[app.SettingTTL]
	if f.entry.Text != "1000" || f.unit.Text != "ms" {
		t.Fatalf("a TTL of 1000 ms shows as %q %s", f.entry.Text, f.unit.Text)
	}
	enter(f.entry, "90000")
	if got := relay.Settings().Catalog.TTLMs; got != 90000 {
		t.Fatalf("90000 typed in ms saved %d ms (message %q)", got, f.msg.Text)
	}
	enter(f.entry, "120000")
	s.load()
	if f.entry.Text != "2" || f.unit.Text != "min" {
		t.Fatalf("a TTL of 2 minutes shows as %q %s", f.entry.Text, f.unit.Text)
	}
}

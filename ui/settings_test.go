package ui

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/codexrelay/codexrelay/proxy"
)

func TestSettingsToggleStaleWhileRevalidate(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.refresh()
	u.showSettings()
	s := u.settings
	if !s.swr.Checked {
		t.Fatal("the check should show the live setting (on)")
	}
	test.Tap(s.swr)
	if relay.Proxy.Stats().Catalog.SWREnabled {
		t.Fatal("unchecking did not turn stale-while-revalidate off in the proxy")
	}
	test.Tap(s.swr)
	if !relay.Proxy.Stats().Catalog.SWREnabled {
		t.Fatal("checking did not turn it on again")
	}

	// A change from the tray shows in the open window at the next tick.
	menuItem(t, u.tray.Menu(), "Stale-while-revalidate").Action()
	u.refresh()
	if s.swr.Checked {
		t.Error("the settings window did not follow the tray's change")
	}
}

func TestSettingsRejectBadPorts(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.refresh()
	u.showSettings()
	s := u.settings
	if s.port.Text != "7455" {
		t.Fatalf("port field %q", s.port.Text)
	}
	for _, c := range []struct{ in, msg string }{
		{"80", "out of range"},
		{"1455", "Codex sign-in callback"},
		{"70000", "out of range"},
		{"abc", "not a port number"},
		{"", "not a port number"},
	} {
		s.port.SetText(c.in)
		test.Tap(s.portApply)
		if !s.portMsg.Visible() || !strings.Contains(s.portMsg.Text, c.msg) {
			t.Errorf("port %q: message %q (visible %v), want %q", c.in, s.portMsg.Text, s.portMsg.Visible(), c.msg)
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
	s.port.SetText(port)
	test.Tap(s.portApply)
	if got := relay.Settings().Listen; got != "127.0.0.1:"+port {
		t.Fatalf("saved listen %q (message %q)", got, s.portMsg.Text)
	}
	if !u.svc.Status().Running || !strings.Contains(s.portMsg.Text, "Listening on http://127.0.0.1:"+port) {
		t.Errorf("status %+v, message %q", u.svc.Status(), s.portMsg.Text)
	}
}

func TestSettingsCatalogAndStrategy(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	if s.ttl.Text != "10" || s.staleMax.Text != "30" {
		t.Fatalf("catalog fields %q %q", s.ttl.Text, s.staleMax.Text)
	}
	s.ttl.SetText("0")
	if !strings.Contains(s.catMsg.Text, "Catalog TTL") || !s.catMsg.Visible() {
		t.Errorf("TTL 0: message %q", s.catMsg.Text)
	}
	s.ttl.SetText("5")
	s.staleMax.SetText("45")
	c := relay.Proxy.Stats().Catalog
	if c.TTLMs != 300_000 || c.StaleMaxAgeMs != 2_700_000 || s.catMsg.Visible() {
		t.Errorf("catalog %d ms / %d ms, message %q", c.TTLMs, c.StaleMaxAgeMs, s.catMsg.Text)
	}

	if s.strategy.Selected != proxy.StrategyPriority {
		t.Fatalf("strategy %q", s.strategy.Selected)
	}
	s.strategy.SetSelected(proxy.StrategyRoundRobin)
	if got := relay.Settings().Strategy; got != proxy.StrategyRoundRobin {
		t.Errorf("strategy saved as %q", got)
	}
}

func TestSettingsLocalKeyShownOnce(t *testing.T) {
	needKeyring(t)
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	test.Tap(s.localKey)
	key, err := relay.LocalKey()
	if err != nil || key == "" {
		t.Fatalf("local key %q, %v (message %q)", key, err, s.localKeyMsg.Text)
	}
	if !s.keyBox.Visible() || s.keyShown.Text != key {
		t.Fatal("the new key is not shown")
	}
	tapButton(t, s.keyBox, "Copy")
	if u.fa.Clipboard().Content() != key {
		t.Error("Copy did not copy the key")
	}
	test.Tap(s.localKey)
	if relay.Settings().LocalAPIKey || s.keyBox.Visible() {
		t.Error("turning the key off left it on or shown")
	}
}

func TestSettingsStartAtLogin(t *testing.T) {
	u, relay := newTestUI(t, nil)
	u.showSettings()
	s := u.settings
	test.Tap(s.startAtLogin)
	if s.loginMsg.Visible() {
		// Where the platform has no login items the error shows and the box unticks.
		if s.startAtLogin.Checked || relay.Settings().StartAtLogin {
			t.Errorf("failed (%q) but stays on", s.loginMsg.Text)
		}
		return
	}
	if !relay.Settings().StartAtLogin {
		t.Fatal("start at login not saved")
	}
	test.Tap(s.startAtLogin)
	if relay.Settings().StartAtLogin || s.loginMsg.Visible() {
		t.Errorf("turning it off: %v %q", relay.Settings().StartAtLogin, s.loginMsg.Text)
	}
}

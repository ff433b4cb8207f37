package tray

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/codexrelay/codexrelay/assets"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
)

// The tray icons, one per state of the relay.
var (
	iconServing  = &trayIcon{"tray-serving.png", assets.TrayServing}
	iconDegraded = &trayIcon{"tray-degraded.png", assets.TrayDegraded}
	iconStopped  = &trayIcon{"tray-stopped.png", assets.TrayStopped}
	iconPaused   = &trayIcon{"tray-paused.png", assets.TrayPaused}
)

// stateIcon is the tray icon of the relay's state s.
func stateIcon(s look.State) *trayIcon {
	switch s {
	case look.Serving:
		return iconServing
	case look.Degraded:
		return iconDegraded
	case look.Paused:
		return iconPaused
	}
	return iconStopped
}

// requestsLine is the tray's second line. It leaves out the requests in flight: they come and
// go within seconds, and each change would rebuild the menu (the dashboard shows them).
func requestsLine(r proxy.RequestStats) string {
	s := look.Plural(r.Total, "request")
	if r.Errors > 0 {
		s += " · " + look.Plural(r.Errors, "error")
	}
	return s
}

// accountLine is an account's line in the tray menu: its name; its five-hour and weekly usage,
// or its state with the clock time a rest ends; and whether it served the last request or
// takes the next one: "personal · 5 h 37% · week 62% · in use", "team · limit until 14:36".
func accountLine(a proxy.AccountStats, snap proxy.Snapshot, now time.Time) string {
	parts := []string{a.Name}
	switch {
	case a.State == proxy.StateReady && a.Quota != nil:
		parts = append(parts, look.UsageShort(a.Quota))
	default:
		state, _ := look.AccountState(a, now)
		parts = append(parts, lowerFirst(state))
	}
	if b := look.BucketRests(a, now); b != "" {
		parts = append(parts, b)
	}
	if c := creditsShort(a.ResetCredits, now); c != "" {
		parts = append(parts, c)
	}
	if b := look.ServingBadge(a.Name, snap); b != "" {
		parts = append(parts, b)
	}
	return strings.Join(parts, " · ")
}

// lowerFirst puts the first letter of s in lower case ("Limit until Fri 09:00" -> "limit until Fri 09:00").
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// truncate shortens s to at most n runes, with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// trayTooltip is what the tray icon says on hover.
func trayTooltip(v view) string {
	_, word, detail := look.Header(v.snap, v.svc)
	if v.pace != "" && v.svc.Running && !v.svc.Paused {
		detail += " · " + v.pace
	}
	return "Codex Relay: " + word + " · " + detail
}

// trayActions are what the tray menu's items do (the tray process's, or a test's).
type trayActions struct {
	// open asks for a window of the window process, by its name (source.Window*).
	open                                 func(name string)
	copyCodexConfig, pause, resume, quit func()
	// redeem spends a banked reset of the named account (credits.go).
	redeem func(account string)
}

// trayMenu is the tray menu for one view: the whole menu is a function of the state, rebuilt
// each tick (Tailscale's systray client does the same), never patched item by item. Tray.show
// hands it to the desktop only when it differs from the one shown. quitting says a Quit is
// draining the relay.
func trayMenu(v view, now time.Time, quitting bool, act trayActions) []*menuItem {
	opener := func(name string) func() { return func() { act.open(name) } }
	_, line := look.StateOf(v.snap, v.svc)
	if quitting {
		line = "Stopping: letting requests finish…"
	}
	status := &menuItem{Label: truncate(line, 90), Disabled: true}
	requests := &menuItem{Label: requestsLine(v.snap.Requests), Disabled: true}
	items := []*menuItem{status, requests}
	if v.today != "" {
		// Today's tokens and cost from the usage ledger; it opens the Usage window.
		items = append(items, item(v.today, opener(source.WindowUsage)))
	}
	if it := updateItem(v.newer); it != nil {
		items = append(items, it)
	}
	items = append(items, separator())

	// One line per account, in priority order, with a dot in its state's colour.
	for _, a := range v.snap.Accounts {
		it := item(truncate(accountLine(a, v.snap, now), 90), opener(source.WindowAccounts))
		_, tone := look.AccountState(a, now)
		it.Icon = dotIcons()[tone] // an account at its limit is not green
		items = append(items, it)
	}
	// Every account rests and one holds a banked reset: the relay's "ask", as an action.
	if name := redeemCandidate(v.snap); name != "" && act.redeem != nil {
		items = append(items, item("Redeem a banked reset of "+truncate(name, 60), func() { act.redeem(name) }))
	}
	if len(v.snap.Accounts) > 0 {
		items = append(items, separator())
	}

	var pause *menuItem
	switch {
	case v.svc.Paused:
		pause = item("Resume proxy", act.resume)
	case v.svc.Running:
		pause = item("Pause proxy", act.pause)
	default:
		pause = item("Start proxy", act.resume)
	}

	quit := item("Quit", act.quit)
	quit.Quit = true // it drains the proxy first

	return append(items,
		item("Open Dashboard", opener(source.WindowDashboard)),
		item("Usage…", opener(source.WindowUsage)),
		item("Accounts…", opener(source.WindowAccounts)),
		item("Settings…", opener(source.WindowSettings)),
		separator(),
		item("Copy Codex config", act.copyCodexConfig),
		item("Configure Codex…", opener(source.WindowConfigureCodex)),
		separator(),
		pause,
		separator(),
		quit,
	)
}

// Tray is the system-tray presence: one menu, one icon and one tooltip, each handed to the
// desktop only when it changed (a rebuilt native menu closes itself on some desktops).
type Tray struct {
	menu    []*menuItem // the menu on screen
	backend trayBackend // nil: nothing to show it on
	state   look.State
	shown   string // signature of the menu on screen
	icon    *trayIcon
	tooltip string // the text on hover
}

// trayBackend is the desktop's tray: fyne.io/systray in the tray process, a recorder in tests.
// The tray calls it from one goroutine at a time, and never after the tray process began to
// leave (a late icon update on a closed D-Bus connection panicked in systray).
type trayBackend interface {
	SetMenu(items []*menuItem)
	SetIcon(icon *trayIcon)
	SetTooltip(text string)
}

func newTray() *Tray {
	return &Tray{state: -1}
}

// show puts items, the icon of state s and the tooltip on the tray, touching the desktop only
// for what changed.
func (t *Tray) show(items []*menuItem, s look.State, tooltip string) {
	// An unchanged menu keeps its items: the native menu holds their actions.
	if sig := menuSignature(items); sig != t.shown {
		t.shown = sig
		t.menu = items
		if t.backend != nil {
			t.backend.SetMenu(items)
		}
	}
	if s != t.state {
		t.state = s
		t.icon = stateIcon(s)
		if t.backend != nil {
			t.backend.SetIcon(t.icon)
		}
	}
	if tooltip != t.tooltip {
		t.tooltip = tooltip
		if t.backend != nil {
			t.backend.SetTooltip(tooltip)
		}
	}
}

// stateFor is the state the icon shows for v.
func (t *Tray) stateFor(v view) look.State {
	s, _ := look.StateOf(v.snap, v.svc)
	return s
}

// menuSignature is what a menu shows, to compare two menus.
func menuSignature(items []*menuItem) string {
	var b strings.Builder
	for _, it := range items {
		icon := ""
		if it.Icon != nil {
			icon = it.Icon.name
		}
		fmt.Fprintf(&b, "%s|%s|%t|%t\n", it.Label, icon, it.Disabled, it.Separator)
	}
	return b.String()
}

// dotIcons are the tray menu's state dots, by tone. Their colours are fixed mid tones: the
// desktop draws the menu in its own light or dark style. Drawn at first use, not at start: the
// window processes, which share this binary, never draw them.
var dotIcons = sync.OnceValue(func() map[look.Tone]*trayIcon {
	return map[look.Tone]*trayIcon{
		look.Good: dotIcon("dot-ready.png", color.NRGBA{R: 0x2e, G: 0xa0, B: 0x43, A: 0xff}),
		look.Warn: dotIcon("dot-resting.png", color.NRGBA{R: 0xd2, G: 0x99, B: 0x22, A: 0xff}),
		look.Bad:  dotIcon("dot-problem.png", color.NRGBA{R: 0xe5, G: 0x53, B: 0x4b, A: 0xff}),
		look.Dim:  dotIcon("dot-disabled.png", color.NRGBA{R: 0x8b, G: 0x94, B: 0x9e, A: 0xff}),
	}
})

// dotIcon draws a filled circle with soft edges as a PNG.
func dotIcon(name string, c color.NRGBA) *trayIcon {
	const size, r = 32, 11.0
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := range size {
		for x := range size {
			dx, dy := float64(x)+0.5-size/2, float64(y)+0.5-size/2
			cover := min(max(r+0.5-math.Hypot(dx, dy), 0), 1)
			if cover > 0 {
				p := c
				p.A = uint8(float64(c.A) * cover)
				img.SetNRGBA(x, y, p)
			}
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img) // cannot fail for an in-memory image
	return &trayIcon{name, buf.Bytes()}
}

package tray

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/app/update"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
)

// TrayApp is the tray process: the relay in-process, its tray icon and menu, and the desktop
// notifications. It has no Fyne app and no GL loop: the tray is fyne.io/systray (over D-Bus on
// Linux), and every window lives in a window process it starts on demand (windowLauncher).
//
// One goroutine (the loop) sleeps until the relay changes (or a time the view depends on
// comes), then reads a view and hands the tray what changed; the menu's actions run on their
// own goroutines and poke the loop. After Quit began to leave, the tray is never touched again.
type TrayApp struct {
	relay *relay.Relay
	svc   *relay.Service
	log   *slog.Logger
	src   source.Source
	now   func() time.Time
	// elapsed is the clock that spaces the ledger's reads.
	elapsed func() time.Time
	usage   source.UsageSource
	today   today
	// pace keeps the pool's forecast, read on the usage line's cadence (source.Pace).
	pace source.Pace

	tray     *Tray
	notifier *notifier
	notes    *noteSender
	// actNotify shows a notification with an action button (the relay's ask: redeem).
	actNotify func(title, body, label string, act func())
	// open asks the window process for a window (windowLauncher.Open).
	open func(name string)
	// copyText puts text on the clipboard without a window (desktop_*.go).
	copyText func(string) error
	// exit ends the tray's event loop (systray.Quit); called once, after the drain.
	exit func()
	// fixed, when set, is a status shown instead of the listener's (tests).
	fixed *app.ServiceStatus
	// async runs a slow action (a drain, a restart) off the caller's goroutine; tests run it
	// inline.
	async func(func())

	poke chan struct{}
	// updates is the update notice (update.go).
	updates updateNotice

	askedAt atomic.Pointer[time.Time] // when the relay's last ask (redeem?) was shown

	mu       sync.Mutex // one apply at a time; guards what follows
	last     view
	quitting bool
	ended    bool // the tray is gone: nothing may touch it any more
	// The loop's notifications wait for the relay to settle (follow): seen is the relay's
	// generation last shown, changedAt when it last moved, pending when the first change not
	// yet told about came (zero: none), and settling whether a timer will look again.
	seen               uint64
	changedAt, pending time.Time
	settling           bool
}

// NewTray builds the tray process's state for relay without starting anything.
func NewTray(relay *relay.Relay, log *slog.Logger) *TrayApp {
	t := &TrayApp{
		relay: relay, svc: relay.NewService(), log: log, src: relay.Proxy,
		now: time.Now, elapsed: time.Now,
		usage:    source.RelayUsage(relay),
		tray:     newTray(),
		notifier: newNotifier(),
		open:     func(string) {},
		copyText: clipboardCopy,
		exit:     func() {},
		async:    func(f func()) { go f() },
		poke:     make(chan struct{}, 1),
	}
	relay.OnCreditEvent(t.creditEvent)
	t.notes = &noteSender{send: func(title, body string) {
		if err := desktopNotify(title, body); err != nil {
			t.log.Debug("desktop notification not sent", "error", err)
		}
	}}
	t.actNotify = func(title, body, label string, act func()) {
		go func() {
			if err := desktopNotifyAction(title, body, label, act); err != nil {
				t.log.Debug("desktop notification not sent", "error", err)
			}
		}()
	}
	return t
}

// view is what one tick of the tray shows: read once, off the tray's goroutine, then applied.
type view struct {
	snap proxy.Snapshot
	svc  app.ServiceStatus
	// notify are the notification settings.
	notify app.NotificationSettings
	// today is the tray's usage line ("" without a ledger to read).
	today string
	// pace is the pool's pace (look.Pace; "" when the forecast says nothing).
	pace string
	// newer is a newer release, when the update check is on and found one (update.go).
	newer update.Release
}

// status is the listener's status (or the fixed one).
func (t *TrayApp) status() app.ServiceStatus {
	if t.fixed != nil {
		return *t.fixed
	}
	return t.svc.Status()
}

// fetch reads what the tray shows; any goroutine.
func (t *TrayApp) fetch() view {
	v := view{snap: t.src.Stats(), svc: t.status()}
	st := t.relay.Settings()
	v.notify = st.Notifications
	v.today = t.today.line(st.Generation, v.snap.Requests.Total, t.elapsed(), t.usage, v.snap.Accounts, t.now(), t.log)
	v.pace = look.Pace(t.pace.Read(v.snap.Requests.Total, t.elapsed(), t.usage, v.snap.Accounts, t.now()), t.now())
	v.newer = t.updates.check(t.relay.App, t.now(), t.changed)
	return v
}

// refresh reads a view, shows it and sends the notifications it calls for at once (at start,
// and tests).
func (t *TrayApp) refresh() {
	v := t.fetch()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return
	}
	t.apply(v)
	t.notify(v)
}

// How the loop follows the relay (source.Follow): changes closer than followGap are shown
// together; it sleeps followEvery at most (the usage line reads the ledger on that clock). A
// change's notifications wait until the relay was quiet for noticeSettle, or noticeWithin
// after the change at most: a request that finds every account at its limit rests them one
// after the other, milliseconds apart, and that is one event, told in one notification.
const (
	followGap    = 250 * time.Millisecond
	followEvery  = time.Minute
	noticeSettle = time.Second
	noticeWithin = 3 * time.Second
)

// loop follows the relay until ctx ends: it sleeps until something the tray shows changes.
func (t *TrayApp) loop(ctx context.Context) {
	source.Follow(ctx, t.src.Changes, t.poke, followGap, followEvery, t.follow)
}

// follow is one look of the loop: it shows the view at once, sends its notifications once the
// relay settled (else a timer pokes the loop then), and says when the clock alone changes
// what it shows.
func (t *TrayApp) follow() time.Duration {
	gen, _ := t.src.Changes()
	v := t.fetch()
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return 0
	}
	t.apply(v)
	if gen != t.seen {
		t.seen, t.changedAt = gen, now
		if t.pending.IsZero() {
			t.pending = now
		}
	}
	if quiet, wait := t.settled(now); quiet {
		t.pending = time.Time{}
		t.notify(v)
	} else if !t.settling {
		t.settling = true
		time.AfterFunc(wait, func() {
			t.mu.Lock()
			t.settling = false
			t.mu.Unlock()
			t.changed()
		})
	}
	return look.NextChange(v.snap, t.now())
}

// settled says whether the notifications of the changes seen may go out at now, and if not,
// how long until they may (under mu).
func (t *TrayApp) settled(now time.Time) (bool, time.Duration) {
	if t.pending.IsZero() {
		return true, 0
	}
	wait := min(t.changedAt.Add(noticeSettle).Sub(now), t.pending.Add(noticeWithin).Sub(now))
	return wait <= 0, wait
}

// apply shows v on the tray (under mu).
func (t *TrayApp) apply(v view) {
	t.last = v
	t.tray.show(trayMenu(v, t.now(), t.quitting, t.actions()), t.tray.stateFor(v), trayTooltip(v))
}

// notify sends the notifications v calls for (under mu).
func (t *TrayApp) notify(v view) {
	if t.fixed != nil {
		return
	}
	now := t.now()
	asked := false
	if at := t.askedAt.Load(); at != nil && now.Sub(*at) < askCovers {
		asked = true
	}
	due := slices.DeleteFunc(t.notifier.next(v.snap, now, v.notify.Threshold()), func(n notice) bool { return !v.notify.Enabled(n.kind) })
	for _, n := range actionable(due, asked) {
		t.notes.add(n.title, n.body)
	}
}

func (t *TrayApp) actions() trayActions {
	return trayActions{open: t.open, copyCodexConfig: t.copyCodexConfig, pause: t.pause, resume: t.resume, quit: t.quit,
		redeem: t.redeem}
}

// tapped is a left click on the tray icon: the dashboard, in the window process. (Fyne's tray
// opened its dashboard from the tray's D-Bus goroutine, outside Fyne's UI thread, and it
// stayed blank; the window process shows it from its own UI thread.)
func (t *TrayApp) tapped() { t.open(source.WindowDashboard) }

// Menu is the tray menu shown now.
func (t *TrayApp) Menu() []*menuItem { return t.tray.menu }

// changed asks the loop for an early tick; it never blocks.
func (t *TrayApp) changed() {
	select {
	case t.poke <- struct{}{}:
	default:
	}
}

func (t *TrayApp) pause() {
	t.async(func() {
		t.svc.Pause() // waits for in-flight requests to drain
		t.changed()
	})
}

func (t *TrayApp) resume() {
	t.async(func() {
		if err := t.svc.Resume(); err != nil {
			t.log.Warn("proxy not started", "error", err)
			t.notes.add("Codex Relay cannot start the proxy", err.Error())
		}
		t.changed()
	})
}

// copyCodexConfig puts the provider block on the clipboard and says so. Where no clipboard
// tool is found, the window process copies it (its clipboard holds it while its window is open).
func (t *TrayApp) copyCodexConfig() {
	if err := t.copyText(t.relay.CodexConfig()); err != nil {
		t.log.Debug("no clipboard without a window", "error", err)
		t.open(source.WindowCopyCodexConfig)
		return
	}
	t.notes.add("Codex config copied",
		"Paste the provider block into ~/.codex/config.toml, or use Configure Codex… to merge it with a backup.")
}

// quit says so on the tray, stops the proxy (letting in-flight requests finish), and then
// ends the tray, which is never touched again.
func (t *TrayApp) quit() {
	t.mu.Lock()
	if t.quitting {
		t.mu.Unlock()
		return
	}
	t.quitting = true
	if !t.ended {
		t.apply(t.last)
	}
	t.mu.Unlock()
	t.async(func() {
		t.svc.Stop()
		t.mu.Lock()
		t.ended = true
		t.mu.Unlock()
		t.exit()
	})
}

// noteSender hands notifications to the desktop off the caller's goroutine, in order: one
// sender goroutine at a time sends what is waiting, then ends (on Linux each is a D-Bus call
// that may block).
type noteSender struct {
	send func(title, body string)

	mu      sync.Mutex
	waiting [][2]string
	sending bool
}

func (s *noteSender) add(title, body string) {
	s.mu.Lock()
	s.waiting = append(s.waiting, [2]string{title, body})
	start := !s.sending
	s.sending = true
	s.mu.Unlock()
	if start {
		go s.run()
	}
}

func (s *noteSender) run() {
	for {
		s.mu.Lock()
		if len(s.waiting) == 0 {
			s.sending = false
			s.mu.Unlock()
			return
		}
		n := s.waiting[0]
		s.waiting = s.waiting[1:]
		s.mu.Unlock()
		s.send(n[0], n[1])
	}
}

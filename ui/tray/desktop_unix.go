//go:build linux || freebsd || openbsd || netbsd

package tray

import (
	"os"
	"os/exec"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/codexrelay/codexrelay/ui/look"
)

// desktopNotify shows a notification through org.freedesktop.Notifications, which expires
// after notifyExpiry. It opens a private session-bus connection: systray closes the shared one
// when the tray leaves, and a notification may still be on its way then.
func desktopNotify(title, body string) error {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return err
	}
	defer conn.Close()
	obj := conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	return obj.Call("org.freedesktop.Notifications.Notify", 0,
		"Codex Relay", uint32(0), look.IconName, title, body, []string{},
		notifyHints(),
		int32(notifyExpiry.Milliseconds())).Err
}

// notifyHints name the app's desktop entry, which links a notification to the app (its name,
// its icon, its settings in the desktop's notification panel).
func notifyHints() map[string]dbus.Variant {
	return map[string]dbus.Variant{"desktop-entry": dbus.MakeVariant(look.DesktopEntry)}
}

// actionWait is how long a notification's action is listened for: a notification server keeps
// an expired notification in its list, where the action can still be chosen.
const actionWait = 15 * time.Minute

// desktopNotifyAction shows a notification with one action button (label): act runs when the
// user chooses it. The connection stays open, listening for the choice, until the notification
// is closed or actionWait has passed.
func desktopNotifyAction(title, body, label string, act func()) error {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return err
	}
	const iface, path = "org.freedesktop.Notifications", "/org/freedesktop/Notifications"
	if err := conn.AddMatchSignal(dbus.WithMatchInterface(iface), dbus.WithMatchObjectPath(path)); err != nil {
		conn.Close()
		return err
	}
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	var id uint32
	err = conn.Object(iface, path).Call(iface+".Notify", 0,
		"Codex Relay", uint32(0), look.IconName, title, body, []string{"act", label},
		notifyHints(),
		int32(notifyExpiry.Milliseconds())).Store(&id)
	if err != nil {
		conn.Close()
		return err
	}
	go func() {
		defer conn.Close()
		timeout := time.NewTimer(actionWait)
		defer timeout.Stop()
		for {
			select {
			case s, ok := <-signals:
				if !ok {
					return
				}
				if len(s.Body) == 0 || s.Body[0] != any(id) {
					continue
				}
				switch s.Name {
				case iface + ".ActionInvoked":
					if len(s.Body) > 1 && s.Body[1] == any("act") {
						act()
					}
					return
				case iface + ".NotificationClosed":
					return
				}
			case <-timeout.C:
				return
			}
		}
	}()
	return nil
}

// clipboardCopy puts text on the clipboard with wl-copy (Wayland), xclip or xsel (X11): each
// stays in the background as the selection's owner, as a window would.
func clipboardCopy(text string) error {
	if os.Getenv("WAYLAND_DISPLAY") != "" {
		if err := pipeTo(text, []string{"wl-copy"}); err != errNoClipboardTool {
			return err
		}
	}
	return pipeTo(text, []string{"xclip", "-selection", "clipboard"},
		[]string{"xsel", "--clipboard", "--input"})
}

func hideConsole(*exec.Cmd) {}

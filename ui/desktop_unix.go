//go:build linux || freebsd || openbsd || netbsd

package ui

import (
	"os"
	"os/exec"

	"github.com/godbus/dbus/v5"
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
		"Codex Relay", uint32(0), "", title, body, []string{},
		map[string]dbus.Variant{"desktop-entry": dbus.MakeVariant(AppID)},
		int32(notifyExpiry.Milliseconds())).Err
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

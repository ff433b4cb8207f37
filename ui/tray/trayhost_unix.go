//go:build linux || freebsd || openbsd || netbsd

package tray

import "github.com/godbus/dbus/v5"

// trayHost reports whether the desktop can show a tray icon: on Linux and the BSDs the tray is
// a StatusNotifierItem, which needs a StatusNotifierWatcher on the session bus. When there is
// none it says why, and the dashboard window opens instead.
func trayHost() (ok bool, why string) {
	conn, err := dbus.SessionBus() // shared with the keychain client: never closed here
	if err != nil {
		return false, "no D-Bus session bus (" + err.Error() + ")"
	}
	var has bool
	err = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&has)
	if err != nil {
		return false, "cannot ask the session bus for a tray host (" + err.Error() + ")"
	}
	if !has {
		return false, "no tray host on this desktop (no org.kde.StatusNotifierWatcher on the session bus; GNOME needs the AppIndicator extension)"
	}
	return true, ""
}

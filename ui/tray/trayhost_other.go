//go:build !(linux || freebsd || openbsd || netbsd)

package tray

// trayHost reports whether the desktop can show a tray icon: macOS and Windows always can.
func trayHost() (ok bool, why string) { return true, "" }

//go:build windows

package app

import (
	"errors"

	"golang.org/x/sys/windows/registry"
)

// runKey is where Windows looks, at each log-in of this user, for programs to start.
const (
	runKey   = `Software\Microsoft\Windows\CurrentVersion\Run`
	runValue = "Codex Relay"
)

// setRunKey writes (on) or deletes (off) the "Codex Relay" value of the current user's Run key: the
// quoted path of this executable. The MSI's uninstall removes the value too.
func setRunKey(exe string, on bool) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	if on {
		return k.SetStringValue(runValue, `"`+exe+`"`)
	}
	if err := k.DeleteValue(runValue); err != nil && !errors.Is(err, registry.ErrNotExist) {
		return err
	}
	return nil
}

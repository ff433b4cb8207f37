//go:build !(linux || freebsd || openbsd || netbsd || darwin || windows)

package tray

import (
	"errors"
	"os/exec"
)

func desktopNotify(title, body string) error { return errors.New("no desktop notifications here") }

func clipboardCopy(text string) error { return errNoClipboardTool }

func hideConsole(*exec.Cmd) {}

// desktopNotifyAction shows the notification without its action, which this desktop's
// notifications do not carry here: the body names where else to choose it.
func desktopNotifyAction(title, body, _ string, _ func()) error { return desktopNotify(title, body) }

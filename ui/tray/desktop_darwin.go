//go:build darwin

package tray

import (
	"os/exec"
	"strconv"
)

// desktopNotify shows a notification through the Notification Center (osascript); macOS takes
// banners away by itself.
func desktopNotify(title, body string) error {
	script := "display notification " + strconv.Quote(body) + " with title " + strconv.Quote(title)
	return exec.Command("osascript", "-e", script).Run()
}

// clipboardCopy puts text on the pasteboard with pbcopy.
func clipboardCopy(text string) error { return pipeTo(text, []string{"pbcopy"}) }

func hideConsole(*exec.Cmd) {}

// desktopNotifyAction shows the notification without its action, which this desktop's
// notifications do not carry here: the body names where else to choose it.
func desktopNotifyAction(title, body, _ string, _ func()) error { return desktopNotify(title, body) }

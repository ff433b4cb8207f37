//go:build darwin

package ui

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

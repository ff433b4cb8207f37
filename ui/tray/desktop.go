package tray

import (
	"errors"
	"os/exec"
	"strings"
	"time"
)

// The tray process has no Fyne app, so it reaches the desktop itself for the two things it
// does without a window: a notification (desktopNotify) and a copy to the clipboard
// (clipboardCopy). Each platform has its file (desktop_unix.go, desktop_darwin.go,
// desktop_windows.go).

// notifyExpiry is how long a notification stays on screen: long enough to read, never for
// good (Fyne sent its notifications with the timeout 0, "never expires", on Linux).
const notifyExpiry = 10 * time.Second

// errNoClipboardTool says that no clipboard program was found; the window process copies then.
var errNoClipboardTool = errors.New("no clipboard tool found")

// pipeTo runs the first of tools found on PATH with text on its standard input.
func pipeTo(text string, tools ...[]string) error {
	for _, t := range tools {
		path, err := exec.LookPath(t[0])
		if err != nil {
			continue
		}
		cmd := exec.Command(path, t[1:]...)
		cmd.Stdin = strings.NewReader(text)
		hideConsole(cmd)
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			return err
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return err
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			return errors.New(t[0] + " did not finish")
		}
	}
	return errNoClipboardTool
}

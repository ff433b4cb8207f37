//go:build !(linux || freebsd || openbsd || netbsd || darwin || windows)

package ui

import (
	"errors"
	"os/exec"
)

func desktopNotify(title, body string) error { return errors.New("no desktop notifications here") }

func clipboardCopy(text string) error { return errNoClipboardTool }

func hideConsole(*exec.Cmd) {}

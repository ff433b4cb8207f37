package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/adrg/xdg"
)

// startAtLogin, the start-at-login row's effect, installs or removes the login item that starts the tray app: an XDG
// autostart entry on Linux, a launch agent on macOS, a value under the current user's Run key on Windows (the
// per-user MSI leaves it to this setting).
func (a *App) startAtLogin(on bool) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the codexrelay binary: %w", err)
	}
	if runtime.GOOS == "windows" {
		if err := setRunKey(exe, on); err != nil {
			return fmt.Errorf("cannot change the start-at-login entry in the registry: %w", err)
		}
		return a.update(func(s *Settings) error { s.StartAtLogin = on; return nil })
	}
	path, content, err := a.loginItem(exe)
	if err != nil {
		return err
	}
	if on {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeAtomic(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("cannot write %s: %w", path, err)
		}
	} else if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return a.update(func(s *Settings) error { s.StartAtLogin = on; return nil })
}

func (a *App) loginItem(exe string) (path, content string, err error) {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd":
		dir := a.opt.AutostartDir
		if dir == "" {
			dir = filepath.Join(xdg.ConfigHome, "autostart")
		}
		return filepath.Join(dir, "codexrelay.desktop"), "[Desktop Entry]\nType=Application\nName=Codex Relay\n" +
			"Comment=OpenAI-compatible relay for your Codex and API accounts\nExec=\"" + exe + "\"\nIcon=codexrelay\n" +
			"Terminal=false\nX-GNOME-Autostart-enabled=true\n", nil
	case "darwin":
		home, _ := os.UserHomeDir()
		return filepath.Join(home, "Library", "LaunchAgents", "io.github.codexrelay.plist"), `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
  <key>Label</key><string>io.github.codexrelay</string>
  <key>ProgramArguments</key><array><string>` + exe + `</string></array>
  <key>RunAtLoad</key><true/>
  <key>ProcessType</key><string>Interactive</string>
</dict></plist>
`, nil
	}
	return "", "", fmt.Errorf("start at login is not supported on %s", runtime.GOOS)
}

//go:build windows

package tray

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// desktopNotify shows a toast through PowerShell and the WinRT toast API (as Fyne does),
// expiring after notifyExpiry, without a console window.
func desktopNotify(title, body string) error {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	script := `[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] | Out-Null
$t = [Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent([Windows.UI.Notifications.ToastTemplateType]::ToastText02)
$x = $t.GetElementsByTagName('text')
$x.Item(0).AppendChild($t.CreateTextNode(` + q(title) + `)) > $null
$x.Item(1).AppendChild($t.CreateTextNode(` + q(body) + `)) > $null
$n = [Windows.UI.Notifications.ToastNotification]::new($t)
$n.ExpirationTime = [DateTimeOffset]::Now.AddSeconds(` + strconv.Itoa(int(notifyExpiry.Seconds())) + `)
[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier('Codex Relay').Show($n)`
	cmd := exec.Command("powershell.exe", "-NoProfile", "-NonInteractive", "-Command", script)
	hideConsole(cmd)
	return cmd.Run()
}

// clipboardCopy puts text on the clipboard with clip.exe.
func clipboardCopy(text string) error { return pipeTo(text, []string{"clip.exe"}) }

// hideConsole keeps a helper program from opening a console window (CREATE_NO_WINDOW).
func hideConsole(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{HideWindow: true, CreationFlags: 0x08000000}
}

// desktopNotifyAction shows the notification without its action, which this desktop's
// notifications do not carry here: the body names where else to choose it.
func desktopNotifyAction(title, body, _ string, _ func()) error { return desktopNotify(title, body) }

//go:build linux || freebsd || openbsd || netbsd

package tray

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// fakeNotifications is an org.freedesktop.Notifications server that records each Notify.
type fakeNotifications struct{ got chan []any }

func (f *fakeNotifications) Notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, expire int32) (uint32, *dbus.Error) {
	f.got <- []any{app, summary, body, expire, icon, hints["desktop-entry"].Value()}
	return 7, nil
}

// serveNotifications makes server org.freedesktop.Notifications on the test's session bus until
// the test ends, and returns its connection (to emit the server's signals); without a bus of
// its own, or with a notification server running there, the test is skipped.
func serveNotifications(t *testing.T, server any) *dbus.Conn {
	t.Helper()
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		t.Skip("needs a D-Bus session bus (make test runs one)")
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Skip("no session bus:", err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Export(server, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Skip("a notification server runs on this bus already")
	}
	t.Cleanup(func() { conn.ReleaseName("org.freedesktop.Notifications") })
	return conn
}

// A notification goes to the desktop's notification server, and expires: Fyne sent its
// notifications with the timeout 0 ("never"), so that they stayed on screen.
func TestDesktopNotifyExpires(t *testing.T) {
	f := &fakeNotifications{got: make(chan []any, 1)}
	serveNotifications(t, f)
	if err := desktopNotify("team reached its limit", "team rests until 14:36."); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-f.got:
		if got[0] != "Codex Relay" || got[1] != "team reached its limit" || got[2] != "team rests until 14:36." {
			t.Errorf("notified %q", got)
		}
		// It names the desktop entry the packages install, and its icon.
		if got[4] != "codexrelay" || got[5] != "codexrelay" {
			t.Errorf("icon %q, desktop entry %q: want those the .deb installs (codexrelay.desktop, hicolor's codexrelay)", got[4], got[5])
		}
		if exp := got[3].(int32); exp <= 0 || exp != int32(notifyExpiry.Milliseconds()) {
			t.Errorf("expire timeout %d ms, want %d", exp, notifyExpiry.Milliseconds())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Notify reached the server")
	}
}

// actionServer is a notification server that records a Notify's actions and, told to, emits
// the signal of the user choosing one.
type actionServer struct {
	actions chan []string
}

func (f *actionServer) Notify(app string, replaces uint32, icon, summary, body string, actions []string,
	hints map[string]dbus.Variant, expire int32) (uint32, *dbus.Error) {
	f.actions <- actions
	return 9, nil
}

// A notification with an action shows its button, and choosing it runs the action once.
func TestDesktopNotifyActionRunsTheChosenAction(t *testing.T) {
	f := &actionServer{actions: make(chan []string, 1)}
	conn := serveNotifications(t, f)
	acted := make(chan struct{}, 2)
	if err := desktopNotifyAction("A banked reset would serve now", "...", "Redeem a banked reset of team", func() { acted <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	if a := uitest.Receive(t, f.actions, "the Notify call"); len(a) != 2 || a[1] != "Redeem a banked reset of team" {
		t.Fatalf("actions %q", a)
	}
	emit := func(name string, body ...any) {
		if err := conn.Emit("/org/freedesktop/Notifications", "org.freedesktop.Notifications."+name, body...); err != nil {
			t.Fatal(err)
		}
	}
	emit("ActionInvoked", uint32(8), "act") // another notification's: not ours
	emit("ActionInvoked", uint32(9), "act")
	select {
	case <-acted:
	case <-time.After(5 * time.Second):
		t.Fatal("the action did not run")
	}
	emit("ActionInvoked", uint32(9), "act") // the listener is gone: it runs once
	select {
	case <-acted:
		t.Fatal("the action ran twice")
	case <-time.After(200 * time.Millisecond):
	}
}

// The desktop entry and the icon the notifications name are those the .deb installs.
func TestNotificationsNameTheInstalledEntry(t *testing.T) {
	b, err := os.ReadFile("../../packaging/deb/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dst: /usr/share/applications/" + look.DesktopEntry + ".desktop",
		"/apps/" + look.IconName + ".png"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the .deb installs no %q", want)
		}
	}
}

package window

import (
	"testing"
	"time"

	"fyne.io/fyne/v2/widget"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// A note about an action goes away by itself: the Codex line's result on the dashboard and
// the accounts window's last action stayed ten minutes and more.
func TestNotesAboutActionsExpire(t *testing.T) {
	u, relay := newTestUI(t, nil)
	if _, err := relay.AddAccount(app.NewAccount{Name: "key", Kind: "openai", BaseURL: "http://127.0.0.1:9/v1"}, app.Secret{APIKey: "sk-test-0000"}); err != nil {
		t.Fatal(err)
	}
	now := uitest.Now
	u.now = func() time.Time { return now }
	u.ShowDashboard()
	tapButton(t, u.dashWin.Content(), "Configure")
	tapButton(t, u.dashWin.Canvas().Overlays().Top(), "Configure")
	r := u.dash.codex.result
	if !r.Visible() || r.Text == "" {
		t.Fatal("Configure said nothing")
	}
	now = now.Add(noteFor - time.Second)
	u.refresh()
	if !r.Visible() {
		t.Fatal("the result went before it could be read")
	}
	now = now.Add(2 * time.Second)
	u.refresh()
	if r.Visible() || r.Text != "" {
		t.Errorf("the result %q still shows %s after it was written", r.Text, noteFor+time.Second)
	}

	u.showAccounts()
	a := u.accounts
	a.done("Renamed “second” to “backup”.")
	now = now.Add(noteFor + time.Second)
	u.refresh()
	if a.status.Visible() {
		t.Errorf("the accounts window still says %q", a.status.Text)
	}
	// An error stays longer than a success, and goes too.
	n := newFleeting(nil)
	n.set("Could not configure Codex: disk full", widget.DangerImportance, uitest.Now)
	if n.expire(uitest.Now.Add(noteFor + time.Second)) {
		t.Error("an error went as fast as a success")
	}
	if !n.expire(uitest.Now.Add(errorNoteFor)) || n.Visible() {
		t.Error("an error stayed past its time")
	}
}

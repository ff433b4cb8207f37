package tray

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
)

// The update notice: off, the feed is never asked; on, the tray asks it (once a day) and shows
// a newer release as a menu line.
func TestTrayShowsANewerReleaseOnlyWhenTheCheckIsOn(t *testing.T) {
	var asked atomic.Int32
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"tag_name":"v99.0.0","html_url":"http://127.0.0.1/releases/v99.0.0"}`))
	}))
	t.Cleanup(feed.Close)
	old := app.Version
	app.Version = "0.1.0" // a release build (a development build is never told to update)
	t.Cleanup(func() { app.Version = old })
	tr, relay, _, _ := newTestTray(t, map[string]string{"CODEXRELAY_LISTEN": "127.0.0.1:0"})
	if err := relay.Set(app.SettingUpdateFeed, feed.URL); err != nil {
		t.Fatal(err)
	}
	has := func() bool {
		for _, it := range tr.Menu() {
			if strings.Contains(it.Label, "99.0.0 is available") {
				return true
			}
		}
		return false
	}
	tr.refresh()
	if has() || asked.Load() != 0 {
		t.Fatalf("the check is off, yet the feed was asked %d times", asked.Load())
	}
	if err := relay.Set(app.SettingUpdateCheck, "true"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !has() {
		if time.Now().After(deadline) {
			t.Fatalf("no update line after the check; the feed was asked %d times", asked.Load())
		}
		tr.refresh()
		time.Sleep(10 * time.Millisecond)
	}
	tr.refresh()
	if n := asked.Load(); n != 1 {
		t.Fatalf("the feed was asked %d times, want once a day", n)
	}
}

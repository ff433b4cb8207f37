package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// The update check makes no network call until the user turns it on, then reads the feed named in
// the settings (a loopback server here).
func TestCheckForUpdateOffByDefault(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"tag_name":"v999.0.0","html_url":"https://example.test/r"}`))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := OpenRelay(Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Set(SettingUpdateFeed, srv.URL); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.CheckForUpdate(ctx, srv.Client()); ok || err != nil || hits.Load() != 0 {
		t.Fatalf("off: ok %v err %v, %d requests", ok, err, hits.Load())
	}
	if err := a.Set(SettingUpdateCheck, "true"); err != nil {
		t.Fatal(err)
	}
	old := Version
	Version = "0.1.0"
	defer func() { Version = old }()
	r, ok, err := a.CheckForUpdate(ctx, srv.Client())
	if !ok || err != nil || !r.Newer || r.Version != "999.0.0" || hits.Load() != 1 {
		t.Fatalf("on: %+v ok %v err %v, %d requests", r, ok, err, hits.Load())
	}
	if err := a.Set(SettingUpdateFeed, "ftp://x"); err == nil {
		t.Fatal("an ftp feed was accepted")
	}
}

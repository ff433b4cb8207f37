package ui

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"github.com/codexrelay/codexrelay/app"
)

func TestTrayMenuShowsStatusAndRequests(t *testing.T) {
	fa := test.NewTempApp(t)
	relay, err := app.Open(app.Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	tr := New(fa, relay, slog.New(slog.DiscardHandler))
	if tr.Menu().Items[0].Label != "Starting…" || !tr.Menu().Items[0].Disabled {
		t.Fatalf("first item %q", tr.Menu().Items[0].Label)
	}
	tr.serving = "127.0.0.1:7455"
	// One request through the proxy (no account: a 503) shows in the count.
	srv := httptest.NewServer(relay.Proxy)
	defer srv.Close()
	resp, _ := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"x"}`))
	resp.Body.Close()
	tr.refresh()
	if got := tr.Menu().Items[0].Label; got != "Listening on http://127.0.0.1:7455/v1" {
		t.Fatalf("status %q", got)
	}
	if got := tr.Menu().Items[1].Label; got != "Requests: 1 (0 in flight)" {
		t.Fatalf("requests %q", got)
	}
	tr.serving, tr.stopErr = "", errors.New("cannot listen on 127.0.0.1:7455: the port is taken")
	tr.refresh()
	if got := tr.Menu().Items[0].Label; !strings.HasPrefix(got, "Stopped: cannot listen") {
		t.Fatalf("status %q", got)
	}
}

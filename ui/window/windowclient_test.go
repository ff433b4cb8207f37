package window

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// serveAPI stands in for the tray process's window API over src, ctl and usage (the tray
// process serves the real one: ui/tray's windowapi.go); it returns the client.
func serveAPI(t *testing.T, src source.Source, ctl source.RelayControl, usage source.UsageSource) *windowClient {
	t.Helper()
	const token = "the-tray-process-token"
	srv := httptest.NewServer(trayStandIn(src, ctl, usage, token))
	t.Cleanup(srv.Close)
	return newWindowClient(srv.URL, token)
}

// trayStandIn serves the local API's route table (app/localapi) from src, ctl and usage behind
// token, as the tray process does (ui/tray's windowAPI).
func trayStandIn(src source.Source, ctl source.RelayControl, usage source.UsageSource, token string) http.Handler {
	b := localapi.Backend{Relay: src, Usage: func() localapi.Usage { return usage }}
	if ctl != nil {
		b.Pause, b.Listener = app.ControlAPI(ctl), app.ControlAPI(ctl)
	}
	return localapi.WithToken(token, localapi.Handler(b))
}

// What the window process reads through the window API is what the tray process has (the
// tray's half, that it serves what it has, is ui/tray's TestWindowAPIRoundTrip).
func TestWindowAPIRoundTrip(t *testing.T) {
	src := uitest.Sample()
	ctl := &uitest.Control{State: app.ServiceStatus{Addr: "127.0.0.1:7455", Err: errors.New("the port is taken"), Warning: "pinned"}}
	usage := uitest.SampleUsage()
	c := serveAPI(t, src, ctl, usage)

	if got, want := uitest.JSON(t, c.Stats()), uitest.JSON(t, src.Snapshot); got != want {
		t.Errorf("stats:\n%s\nwant\n%s", got, want)
	}
	if got, want := uitest.JSON(t, c.Traces(1)), uitest.JSON(t, src.Recent[:1]); got != want {
		t.Errorf("traces:\n%s\nwant\n%s", got, want)
	}
	st := c.Status()
	if st.Addr != "127.0.0.1:7455" || st.Err == nil || st.Err.Error() != "the port is taken" || st.Warning != "pinned" {
		t.Errorf("status %+v", st)
	}
	c.Pause()
	if err := c.SetListen("127.0.0.1:7460"); err != nil || ctl.Pauses != 1 || ctl.Listen != "127.0.0.1:7460" {
		t.Errorf("pause %d, listen %q (%v)", ctl.Pauses, ctl.Listen, err)
	}
	ctl.ResumeErr = errors.New("cannot listen on 127.0.0.1:7455: the port is taken")
	if err := c.Resume(); err == nil || err.Error() != ctl.ResumeErr.Error() {
		t.Errorf("resume: %v", err)
	}

	q := ledger.Query{Since: uitest.Now.Add(-7 * 24 * time.Hour), By: "model"}
	want, _ := usage.Summary(t.Context(), q)
	got, err := c.Summary(t.Context(), q)
	if err != nil || uitest.JSON(t, got.Groups) != uitest.JSON(t, want.Groups) || got.Total.Tokens() != want.Total.Tokens() {
		t.Errorf("summary %v: %+v, want %+v", err, got, want)
	}
	days, err := c.Daily(t.Context(), q.Since)
	wantDays, _ := usage.Daily(t.Context(), q.Since)
	if err != nil || uitest.JSON(t, days) != uitest.JSON(t, wantDays) {
		t.Errorf("daily %v: %+v", err, days)
	}
	b, err := c.Burn(t.Context(), "personal")
	if err != nil || b.PrimaryTokensPerPercent != 212_000 {
		t.Errorf("burn %v: %+v", err, b)
	}
	f, err := c.Forecast(t.Context(), []string{"personal", "team"}, uitest.Now)
	if err != nil || !f.Now.Equal(uitest.Now) || !f.RunsOut.Equal(usage.Pool.RunsOut) || f.TokensLastHour != 4_100_000 {
		t.Errorf("forecast %v: %+v", err, f)
	}
	// The ledger's states come through as the errors the Usage window knows.
	usage.Off = true
	if _, err := c.Summary(t.Context(), q); !errors.Is(err, source.ErrUsageOff) {
		t.Errorf("off: %v", err)
	}
	usage.Off = false
	c2 := serveAPI(t, src, ctl, &source.FixedUsage{Err: source.ErrUsageClosed})
	if _, err := c2.Daily(t.Context(), q.Since); !errors.Is(err, source.ErrUsageClosed) {
		t.Errorf("closed: %v", err)
	}
}

// The window API answers only to its token, and the window process says so (the tray's half,
// that it refuses, is ui/tray's TestWindowAPIWantsItsToken).
func TestWindowAPIWantsItsToken(t *testing.T) {
	c := serveAPI(t, uitest.Sample(), &uitest.Control{}, uitest.SampleUsage())
	for _, token := range []string{"", "guess", c.token + "x"} {
		bad := newWindowClient(c.base, token)
		if _, err := bad.api.Stats(t.Context()); err == nil || !strings.Contains(err.Error(), "token") {
			t.Errorf("token %q: %v", token, err)
		}
		if st := bad.Status(); st.Err == nil {
			t.Errorf("token %q: a status without an error", token)
		}
		if _, err := bad.api.Pause(t.Context()); err == nil {
			t.Errorf("token %q: paused", token)
		}
	}
	// Without the tray process, the window says so instead of a blank state.
	gone := newWindowClient("http://127.0.0.1:9", c.token)
	if st := gone.Status(); !errors.Is(st.Err, errTrayGone) {
		t.Errorf("tray gone: %+v", st)
	}
}

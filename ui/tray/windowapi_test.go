package tray

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// serveAPI serves a window API over src, ctl and usage; it returns its base URL and token.
func serveAPI(t *testing.T, src source.Source, ctl source.RelayControl, usage source.UsageSource) (base, token string) {
	t.Helper()
	api := &windowAPI{src: src, ctl: ctl, usage: func() source.UsageSource { return usage }, token: newToken()}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL, api.token
}

// ask sends one request to the window API at base with token, as a window process would, and
// decodes a 2xx answer into out (nil: none). Any other answer comes back as its status and
// "code: message".
func ask(t *testing.T, base, token, method, path string, q url.Values, out any) (status int, failure string) {
	t.Helper()
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("%s %s answered %s without the error shape: %v", method, path, resp.Status, err)
		}
		return resp.StatusCode, e.Error.Code + ": " + e.Error.Message
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode, ""
}

// What the tray process serves through the window API is what it has, and the ledger's states
// come as the codes the window process knows (its half, the client, is ui/window's
// TestWindowAPIRoundTrip).
func TestWindowAPIRoundTrip(t *testing.T) {
	src := uitest.Sample()
	ctl := &uitest.Control{State: app.ServiceStatus{Addr: "127.0.0.1:7455", Err: errors.New("the port is taken"), Warning: "pinned"}}
	usage := uitest.SampleUsage()
	base, token := serveAPI(t, src, ctl, usage)

	var snap proxy.Snapshot
	ask(t, base, token, http.MethodGet, "/relay/stats", nil, &snap)
	if got, want := uitest.JSON(t, snap), uitest.JSON(t, src.Snapshot); got != want {
		t.Errorf("stats:\n%s\nwant\n%s", got, want)
	}
	var traces []proxy.Trace
	ask(t, base, token, http.MethodGet, "/relay/traces", url.Values{"limit": {"1"}}, &traces)
	if got, want := uitest.JSON(t, traces), uitest.JSON(t, src.Recent[:1]); got != want {
		t.Errorf("traces:\n%s\nwant\n%s", got, want)
	}
	var j localapi.Status
	ask(t, base, token, http.MethodGet, "/relay/status", nil, &j)
	if st := app.ServiceStatusOf(j); st.Addr != "127.0.0.1:7455" || st.Err == nil || st.Err.Error() != "the port is taken" || st.Warning != "pinned" {
		t.Errorf("status %+v", st)
	}
	ask(t, base, token, http.MethodPost, "/relay/pause", nil, nil)
	if code, failure := ask(t, base, token, http.MethodPost, "/relay/listen", url.Values{"addr": {"127.0.0.1:7460"}}, nil); code != http.StatusOK ||
		ctl.Pauses != 1 || ctl.Listen != "127.0.0.1:7460" {
		t.Errorf("pause %d, listen %q (%d %s)", ctl.Pauses, ctl.Listen, code, failure)
	}
	ctl.ResumeErr = errors.New("cannot listen on 127.0.0.1:7455: the port is taken")
	if code, failure := ask(t, base, token, http.MethodPost, "/relay/resume", nil, nil); code != http.StatusInternalServerError ||
		failure != "resume_failed: "+ctl.ResumeErr.Error() {
		t.Errorf("resume: %d %s", code, failure)
	}

	at := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	q := ledger.Query{Since: uitest.Now.Add(-7 * 24 * time.Hour), By: "model"}
	want, _ := usage.Summary(t.Context(), q)
	var got ledger.Report
	summary := url.Values{"since": {at(q.Since)}, "by": {q.By}}
	if _, failure := ask(t, base, token, http.MethodGet, "/relay/usage/summary", summary, &got); failure != "" ||
		uitest.JSON(t, got.Groups) != uitest.JSON(t, want.Groups) || got.Total.Tokens() != want.Total.Tokens() {
		t.Errorf("summary %s: %+v, want %+v", failure, got, want)
	}
	var days []ledger.DayByAccount
	wantDays, _ := usage.Daily(t.Context(), q.Since)
	if _, failure := ask(t, base, token, http.MethodGet, "/relay/usage/daily", url.Values{"since": {at(q.Since)}}, &days); failure != "" ||
		uitest.JSON(t, days) != uitest.JSON(t, wantDays) {
		t.Errorf("daily %s: %+v", failure, days)
	}
	var b ledger.Burn
	if _, failure := ask(t, base, token, http.MethodGet, "/relay/usage/burn", url.Values{"account": {"personal"}}, &b); failure != "" ||
		b.PrimaryTokensPerPercent != 212_000 {
		t.Errorf("burn %s: %+v", failure, b)
	}
	var f ledger.Forecast
	forecast := url.Values{"account": {"personal", "team"}, "now": {at(uitest.Now)}}
	if _, failure := ask(t, base, token, http.MethodGet, "/relay/usage/forecast", forecast, &f); failure != "" ||
		!f.Now.Equal(uitest.Now) || !f.RunsOut.Equal(usage.Pool.RunsOut) || f.TokensLastHour != 4_100_000 {
		t.Errorf("forecast %s: %+v", failure, f)
	}
	// The ledger's states go as the codes the Usage window knows them by.
	usage.Off = true
	if code, failure := ask(t, base, token, http.MethodGet, "/relay/usage/summary", summary, nil); code != http.StatusServiceUnavailable ||
		!strings.HasPrefix(failure, "usage_off:") {
		t.Errorf("off: %d %s", code, failure)
	}
	usage.Off = false
	base2, token2 := serveAPI(t, src, ctl, &source.FixedUsage{Err: source.ErrUsageClosed})
	if _, failure := ask(t, base2, token2, http.MethodGet, "/relay/usage/daily", url.Values{"since": {at(q.Since)}}, nil); !strings.HasPrefix(failure, "usage_closed:") {
		t.Errorf("closed: %s", failure)
	}
}

// The window API answers only to its token (the window process's half, which says so, is
// ui/window's TestWindowAPIWantsItsToken).
func TestWindowAPIWantsItsToken(t *testing.T) {
	ctl := &uitest.Control{}
	base, token := serveAPI(t, uitest.Sample(), ctl, uitest.SampleUsage())
	for _, bad := range []string{"", "guess", token + "x"} {
		if code, failure := ask(t, base, bad, http.MethodGet, "/relay/stats", nil, nil); code != http.StatusUnauthorized ||
			!strings.HasPrefix(failure, "unauthorized:") || !strings.Contains(failure, "token") {
			t.Errorf("token %q: %d %s", bad, code, failure)
		}
		if code, _ := ask(t, base, bad, http.MethodGet, "/relay/status", nil, nil); code != http.StatusUnauthorized {
			t.Errorf("token %q: the status answered %d", bad, code)
		}
		if code, _ := ask(t, base, bad, http.MethodPost, "/relay/pause", nil, nil); code != http.StatusUnauthorized || ctl.Pauses != 0 {
			t.Errorf("token %q: paused (%d)", bad, code)
		}
	}
}

package localapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

const (
	localKey = "crk-local-test-key"
	secret   = "the-instance-secret"
	token    = "the-window-token"
)

// relayPort is a relay whose port serves the table as an embedder does: the proxy's parts and
// a usage ledger, no listener.
func relayPort(t *testing.T, b *backend) *httptest.Server {
	t.Helper()
	s := proxy.New(proxy.Options{LocalAPIKey: localKey, LocalAPI: func(s *proxy.Server) http.Handler {
		rb := localapi.ServerBackend(s)
		rb.Usage = func() localapi.Usage { return b.usage }
		return localapi.Handler(rb)
	}})
	s.SetInstanceSecret(secret)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

// windowPort is the tray's window port: every part, behind the token.
func windowPort(t *testing.T, b *backend) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(localapi.WithToken(token, localapi.Handler(b.full())))
	t.Cleanup(srv.Close)
	return srv
}

// The one table is served on both ports, each behind its own guard: on the relay port the
// local key (or the instance signature, which the pause routes need), on the window port the
// token; a route of a part the port lacks answers 404 not_served; every refusal is in the
// OpenAI error shape.
func TestTheTableIsServedOnBothPorts(t *testing.T) {
	b := newBackend()
	relay, window := relayPort(t, b), windowPort(t, b)
	for _, rt := range localapi.Routes() {
		if rt.Doc == "" {
			t.Errorf("%s has no line in the table", describe(rt))
		}
		listener := rt.Path == "/relay/status" || rt.Path == "/relay/listen" // the tray's own
		// The relay port: nothing without the key.
		if code, e := send(t, routeRequest(t, relay.URL, rt)); code != http.StatusUnauthorized || e.Error.Code != "invalid_api_key" {
			t.Errorf("relay port, %s without the key: %d %+v", describe(rt), code, e)
		}
		keyed := routeRequest(t, relay.URL, rt)
		keyed.Header.Set("Authorization", "Bearer "+localKey)
		code, e := send(t, keyed)
		switch {
		case listener:
			if code != http.StatusNotFound || e.Error.Code != "not_served" {
				t.Errorf("relay port, %s: %d %+v, want 404 not_served", describe(rt), code, e)
			}
		case rt.Proof == localapi.ProofFolder:
			if code != http.StatusUnauthorized || e.Error.Code != "unsigned_request" {
				t.Errorf("relay port, %s with the key alone: %d %+v", describe(rt), code, e)
			}
		case code == http.StatusUnauthorized:
			t.Errorf("relay port, %s with the key: refused %+v", describe(rt), e)
		}
		signed := routeRequest(t, relay.URL, rt)
		proxy.SignInstanceRequest(signed, secret, time.Now())
		if code, e := send(t, signed); code == http.StatusUnauthorized || (listener && code != http.StatusNotFound) {
			t.Errorf("relay port, %s signed: %d %+v", describe(rt), code, e)
		}

		// The window port: nothing without its token, everything with it.
		for _, bad := range []string{"", "guess", token + "x", localKey} {
			req := routeRequest(t, window.URL, rt)
			if bad != "" {
				req.Header.Set("Authorization", "Bearer "+bad)
			}
			if code, e := send(t, req); code != http.StatusUnauthorized || e.Error.Code != "unauthorized" {
				t.Errorf("window port, %s with token %q: %d %+v", describe(rt), bad, code, e)
			}
		}
		req := routeRequest(t, window.URL, rt)
		req.Header.Set("Authorization", "Bearer "+token)
		if code, e := send(t, req); code != http.StatusOK {
			t.Errorf("window port, %s: %d %+v", describe(rt), code, e)
		}
	}

	// What is no route: 404 unknown_route, or 405 with the method a route takes.
	for _, base := range []struct{ url, auth string }{{relay.URL, localKey}, {window.URL, token}} {
		for _, c := range []struct {
			method, path string
			status       int
			code, allow  string
		}{
			{"GET", "/relay/nothing", 404, "unknown_route", ""},
			{"GET", "/relay", 404, "unknown_route", ""},
			{"POST", "/relay/stats", 405, "method_not_allowed", "GET"},
			{"GET", "/relay/pause", 405, "method_not_allowed", "POST"},
			{"GET", "/relay/accounts/work/redeem-credit", 405, "method_not_allowed", "POST"},
		} {
			req, _ := http.NewRequest(c.method, base.url+c.path, nil)
			req.Header.Set("Authorization", "Bearer "+base.auth)
			code, e := send(t, req)
			if code != c.status || e == nil || e.Error.Code != c.code {
				t.Errorf("%s %s %s: %d %+v", base.url, c.method, c.path, code, e)
			}
		}
	}
}

// recorder notes the method and path of each request it passes on.
type recorder struct {
	mu   sync.Mutex
	seen map[string]bool
	h    http.Handler
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen[req.Method+" "+req.URL.Path] = true
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The client has a method for every route, and what it reads is what the backend answered.
func TestTheClientRoundTripsEveryRoute(t *testing.T) {
	b := newBackend()
	rec := &recorder{seen: map[string]bool{}, h: localapi.WithToken(token, localapi.Handler(b.full()))}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c := localapi.NewClient(srv.URL, localapi.Bearer(token), 10*time.Second)
	ctx := t.Context()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	snap, err := c.Stats(ctx)
	must("stats", err)
	if got, want := asJSON(t, snap), asJSON(t, b.relay.snap); got != want {
		t.Errorf("stats:\n%s\nwant\n%s", got, want)
	}
	traces, err := c.Traces(ctx, 1)
	must("traces", err)
	if got, want := asJSON(t, traces), asJSON(t, b.relay.traces[:1]); got != want {
		t.Errorf("traces %s, want %s", got, want)
	}
	for after, want := range map[string][]proxy.Trace{"req_1": b.relay.traces[:1], "req_2": {}, "req_0": b.relay.traces, "": b.relay.traces} {
		traces, err := c.TracesAfter(ctx, 50, after)
		must("traces after", err)
		if got, want := asJSON(t, traces), asJSON(t, want); got != want {
			t.Errorf("traces after %q: %s, want %s", after, got, want)
		}
	}
	b.relay.sig.Raise()
	gen, err := c.Changes(ctx, 0, 0)
	must("changes", err)
	if gen != 1 {
		t.Errorf("changes: generation %d after one change, want 1", gen)
	}

	rep, err := c.Usage(ctx, "7d", "model")
	must("usage", err)
	if q := b.usage.queries[0]; q.By != "model" || time.Since(q.Since) < 7*24*time.Hour-time.Minute || rep.Groups[0].InputTokens != 1200 {
		t.Errorf("usage: asked %+v, got %+v", q, rep)
	}
	q := ledger.Query{Since: testNow.Add(-36 * time.Hour), Until: testNow, By: "project"}
	rep, err = c.Summary(ctx, q)
	must("summary", err)
	if got := b.usage.queries[1]; !got.Since.Equal(q.Since) || !got.Until.Equal(q.Until) || got.By != "project" || rep.TierMultipliers["priority"] != 2 {
		t.Errorf("summary: asked %+v, got %+v", got, rep)
	}
	days, err := c.Daily(ctx, q.Since)
	must("daily", err)
	if !b.usage.since.Equal(q.Since) || len(days) != 1 || days[0].OutputTokens != 99 {
		t.Errorf("daily: since %v, got %+v", b.usage.since, days)
	}
	burn, err := c.Burn(ctx, "work")
	must("burn", err)
	if burn.Account != "work" || burn.PrimaryTokensPerPercent != 212_000 {
		t.Errorf("burn %+v", burn)
	}
	f, err := c.Forecast(ctx, []string{"work", "team"}, testNow)
	must("forecast", err)
	if !f.Now.Equal(testNow) || !b.usage.now.Equal(testNow) || strings.Join(b.usage.accounts, ",") != "work,team" || !f.RunsOut.Equal(testNow.Add(time.Hour)) {
		t.Errorf("forecast: asked %v %v, got %+v", b.usage.accounts, b.usage.now, f)
	}

	res, err := c.RedeemCredit(ctx, "work")
	must("redeem", err)
	if res.Account != "work" || res.Code != "reset" || res.WindowsReset != 2 || !res.RedeemedAt.Equal(testNow) {
		t.Errorf("redeem %+v", res)
	}
	for _, step := range []struct {
		pause          bool
		paused, change bool
	}{{true, true, true}, {true, true, false}, {false, false, true}, {false, false, false}} {
		set := c.Resume
		if step.pause {
			set = c.Pause
		}
		st, err := set(ctx)
		must("pause", err)
		if st.Paused != step.paused || st.Changed != step.change {
			t.Errorf("pause %v: %+v", step.pause, st)
		}
	}
	st, err := c.Status(ctx)
	must("status", err)
	if st.Addr != "127.0.0.1:7455" || !st.Running || st.Warning != "pinned" {
		t.Errorf("status %+v", st)
	}
	st, err = c.SetListen(ctx, "127.0.0.1:7460")
	must("listen", err)
	if b.control.listen != "127.0.0.1:7460" || st.Addr != "127.0.0.1:7460" {
		t.Errorf("listen: %q, status %+v", b.control.listen, st)
	}

	for _, rt := range localapi.Routes() {
		if path := strings.Replace(rt.Path, "{name}", "work", 1); !rec.seen[rt.Method+" "+path] {
			t.Errorf("the client has no method for %s", describe(rt))
		}
	}
}

// An error answer becomes an *localapi.Error with the answer's status, code and message (the
// serving side's text, which holds no secret), matching the error its code stands for.
func TestErrorAnswersBecomeTypedErrors(t *testing.T) {
	b := newBackend()
	srv := windowPort(t, b)
	c := localapi.NewClient(srv.URL, localapi.Bearer(token), 10*time.Second)
	ctx := t.Context()
	expect := func(what string, err error, status int, code string, is error) *localapi.Error {
		t.Helper()
		var e *localapi.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %v is not a *localapi.Error", what, err)
		}
		if e.Status != status || e.Code != code || (is != nil && !errors.Is(err, is)) {
			t.Errorf("%s: %d %q %q (is %v: %v)", what, e.Status, e.Code, e.Message, is, errors.Is(err, is))
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("%s: the error names the token: %v", what, err)
		}
		return e
	}

	b.credits.err = fmt.Errorf("plus: %w", proxy.ErrNoResetCredit)
	_, err := c.RedeemCredit(ctx, "plus")
	if e := expect("no credit", err, 409, "no_reset_credit", proxy.ErrNoResetCredit); e.Message != b.credits.err.Error() {
		t.Errorf("message %q, want the relay's %q", e.Message, b.credits.err)
	}
	b.credits.err = proxy.ErrRedeemPending
	_, err = c.RedeemCredit(ctx, "plus")
	expect("pending", err, 504, "redeem_pending", proxy.ErrRedeemPending)
	b.credits.err = errors.New("the backend answered HTTP 409: credit [redacted] is not yours")
	_, err = c.RedeemCredit(ctx, "plus")
	if e := expect("refused", err, 502, "redeem_failed", nil); e.Message != b.credits.err.Error() || errors.Unwrap(err) != nil {
		t.Errorf("refused: %q, unwraps to %v", e.Message, errors.Unwrap(err))
	}

	b.usage.err = localapi.ErrUsageOff
	_, err = c.Summary(ctx, ledger.Query{})
	expect("usage off", err, 503, "usage_off", localapi.ErrUsageOff)
	_, err = c.Usage(ctx, "", "")
	expect("usage off, the command line's route", err, 404, "usage_unavailable", nil)
	b.usage.err = fmt.Errorf("closed meanwhile: %w", localapi.ErrUsageClosed)
	_, err = c.Daily(ctx, testNow)
	expect("usage closed", err, 503, "usage_closed", localapi.ErrUsageClosed)
	b.usage.err = errors.New("database is locked")
	_, err = c.Burn(ctx, "work")
	expect("usage failed", err, 503, "usage_failed", nil)
	_, err = c.Usage(ctx, "7d", "")
	expect("usage failed, the command line's route", err, 503, "usage_unavailable", nil)
	b.usage.err = nil
	_, err = c.Usage(ctx, "fortnight", "")
	if e := expect("a bad since", err, 400, "invalid_value", nil); e.Param != "since" {
		t.Errorf("param %q", e.Param)
	}
	_, err = c.Usage(ctx, "", "planet")
	expect("a bad grouping", err, 400, "invalid_value", nil)
	_, err = c.Traces(ctx, 0)
	expect("a bad limit", err, 400, "invalid_limit", nil)

	b.control.resumeErr = errors.New("cannot listen on 127.0.0.1:7455: the port is taken")
	_, err = c.Resume(ctx)
	if e := expect("resume", err, 500, "resume_failed", nil); e.Message != b.control.resumeErr.Error() {
		t.Errorf("resume: %q", e.Message)
	}
	b.control.listenErr = errors.New(`"0.0.0.0:80" is not a loopback address`)
	_, err = c.SetListen(ctx, "0.0.0.0:80")
	expect("listen", err, 409, "listen_failed", nil)

	// A part the port lacks; an answer that is not in the OpenAI shape.
	bare := httptest.NewServer(localapi.Handler(localapi.Backend{Relay: b.relay}))
	defer bare.Close()
	_, err = localapi.NewClient(bare.URL, nil, 10*time.Second).Status(ctx)
	expect("no listener", err, 404, "not_served", nil)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	}))
	defer plain.Close()
	_, err = localapi.NewClient(plain.URL, localapi.Bearer(token), 10*time.Second).Stats(ctx)
	if e := expect("plain text", err, 502, "", nil); !strings.Contains(e.Message, "502") {
		t.Errorf("plain text: %q", e.Message)
	}
}

// A signed client talks to the relay of its folder, and refuses whatever else answers on its
// address: an answer without the relay's proof is ErrNotTheRelay, and what it sent there
// carried no key.
func TestASignedClientRefusesUnsignedAnswers(t *testing.T) {
	b := newBackend()
	relay := relayPort(t, b)
	c := localapi.NewClient(relay.URL, localapi.Signed(secret, nil), 10*time.Second)
	if _, err := c.Stats(t.Context()); err != nil {
		t.Fatalf("the relay's own answer: %v", err)
	}
	if st, err := c.Pause(t.Context()); err != nil || !st.Paused || !st.Changed {
		t.Fatalf("a signed pause: %+v %v", st, err)
	}
	if _, err := localapi.NewClient(relay.URL, localapi.Signed("another-secret", nil), 10*time.Second).Stats(t.Context()); !errors.Is(err, localapi.ErrNotTheRelay) {
		t.Fatalf("signed with another secret: %v", err)
	}

	var mu sync.Mutex
	var headers []http.Header
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Clone())
		mu.Unlock()
		localapi.Handler(b.full()).ServeHTTP(w, r) // a forged answer, well formed but unsigned
	}))
	defer impostor.Close()
	c = localapi.NewClient(impostor.URL, localapi.Signed(secret, nil), 10*time.Second)
	if _, err := c.Stats(t.Context()); !errors.Is(err, localapi.ErrNotTheRelay) {
		t.Fatalf("an unsigned answer: %v", err)
	}
	if _, err := c.RedeemCredit(t.Context(), "work"); !errors.Is(err, localapi.ErrNotTheRelay) {
		t.Fatalf("an unsigned redemption: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, h := range headers {
		if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" || h.Get(proxy.InstanceAuthHeader) == "" {
			t.Errorf("the impostor got %v", h)
		}
	}
}

// GET /relay/changes waits until the relay's state differs from the generation the caller
// showed, answers at once when it does already, and answers the same generation when its
// wait ends: a window sleeps on it instead of polling.
func TestChangesWaitsForTheNextChange(t *testing.T) {
	b := newBackend()
	srv := httptest.NewServer(localapi.WithToken(token, localapi.Handler(b.full())))
	defer srv.Close()
	c := localapi.NewClient(srv.URL, localapi.Bearer(token), time.Second) // shorter than the waits below: Changes is not bound by it
	ctx := t.Context()
	g0, err := c.Changes(ctx, 0, 0)
	if err != nil || g0 != 0 {
		t.Fatalf("at once: %d %v", g0, err)
	}
	answered := make(chan uint64, 1)
	go func() {
		g, err := c.Changes(ctx, g0, 30*time.Second)
		if err != nil {
			t.Error(err)
		}
		answered <- g
	}()
	select {
	case g := <-answered:
		t.Fatalf("answered %d before any change", g)
	case <-time.After(1500 * time.Millisecond): // past the client's own timeout
	}
	b.relay.sig.Raise()
	select {
	case g := <-answered:
		if g != g0+1 {
			t.Fatalf("answered %d after one change from %d", g, g0)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer after a change")
	}
	if g, err := c.Changes(ctx, g0, 30*time.Second); err != nil || g != g0+1 {
		t.Fatalf("a caller behind: %d %v, want %d at once", g, err, g0+1)
	}
	if g, err := c.Changes(ctx, g0+1, 50*time.Millisecond); err != nil || g != g0+1 {
		t.Fatalf("a wait that ends: %d %v", g, err)
	}
	for _, q := range []string{"after=x", "after=1&wait=soon", "after=1&wait=-1s"} {
		req, _ := http.NewRequest("GET", srv.URL+"/relay/changes?"+q, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if code, e := send(t, req); code != http.StatusBadRequest || e.Error.Code != "invalid_value" {
			t.Errorf("%s: %d %+v", q, code, e)
		}
	}
}

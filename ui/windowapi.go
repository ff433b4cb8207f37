package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
)

// windowAPI serves the window API for one relay (A's side).
type windowAPI struct {
	src   source.Source
	ctl   source.RelayControl
	usage func() source.UsageSource
	token string
}

// newToken is a random bearer token for the window API.
func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// serveWindowAPI listens on a loopback port and serves api there until ctx ends. It returns
// the base URL.
func serveWindowAPI(ctx context.Context, api *windowAPI) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: windowAPIIdle}
	go srv.Serve(capListener(ln, windowAPIMaxConns)) // windowlimits.go
	go func() { <-ctx.Done(); srv.Close() }()
	return "http://" + ln.Addr().String(), nil
}

func (api *windowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if api.token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(api.token)) != 1 {
		apiError(w, http.StatusUnauthorized, source.CodeUnauthorized, "the window API needs the token of the tray process")
		return
	}
	q := r.URL.Query()
	ctx, cancel := context.WithTimeout(r.Context(), source.UsageReadTimeout)
	defer cancel()
	switch r.Method + " " + r.URL.Path {
	case "GET /relay/stats":
		apiJSON(w, api.src.Stats())
	case "GET /relay/traces":
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil {
			limit = source.RecentTraces
		}
		apiJSON(w, api.src.Traces(limit))
	case "GET /relay/status":
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "POST /relay/pause":
		api.ctl.Pause()
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "POST /relay/resume":
		if err := api.ctl.Resume(); err != nil {
			apiError(w, http.StatusConflict, source.CodeFailed, err.Error())
			return
		}
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "POST /relay/listen":
		if err := api.ctl.SetListen(q.Get("addr")); err != nil {
			apiError(w, http.StatusConflict, source.CodeFailed, err.Error())
			return
		}
		apiJSON(w, source.StatusToJSON(api.ctl.Status()))
	case "GET /relay/usage/summary":
		since, err1 := parseAPITime(q.Get("since"))
		until, err2 := parseAPITime(q.Get("until"))
		if err := errors.Join(err1, err2); err != nil {
			apiError(w, http.StatusBadRequest, source.CodeBadRequest, err.Error())
			return
		}
		rep, err := api.usage().Summary(ctx, ledger.Query{Since: since, Until: until, By: q.Get("by")})
		usageAnswer(w, rep, err)
	case "GET /relay/usage/daily":
		since, err := parseAPITime(q.Get("since"))
		if err != nil {
			apiError(w, http.StatusBadRequest, source.CodeBadRequest, err.Error())
			return
		}
		days, err := api.usage().Daily(ctx, since)
		usageAnswer(w, days, err)
	case "GET /relay/usage/burn":
		b, err := api.usage().Burn(ctx, q.Get("account"))
		usageAnswer(w, b, err)
	case "GET /relay/usage/forecast":
		now, err := parseAPITime(q.Get("now"))
		if err != nil {
			apiError(w, http.StatusBadRequest, source.CodeBadRequest, err.Error())
			return
		}
		f, err := api.usage().Forecast(ctx, q["account"], now)
		usageAnswer(w, f, err)
	default:
		apiError(w, http.StatusNotFound, source.CodeBadRequest, "no such route: "+r.Method+" "+r.URL.Path)
	}
}

func parseAPITime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func apiTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

func usageAnswer(w http.ResponseWriter, v any, err error) {
	switch {
	case errors.Is(err, source.ErrUsageOff):
		apiError(w, http.StatusServiceUnavailable, source.CodeUsageOff, err.Error())
	case errors.Is(err, source.ErrUsageClosed):
		apiError(w, http.StatusServiceUnavailable, source.CodeUsageClosed, err.Error())
	case err != nil:
		apiError(w, http.StatusServiceUnavailable, source.CodeFailed, err.Error())
	default:
		apiJSON(w, v)
	}
}

func apiJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// windowClient is the window process's side of the window API: a Source, a UsageSource and a
// RelayControl (package source) over loopback HTTP.
type windowClient struct {
	base, token string
	hc          *http.Client
}

func newWindowClient(base, token string) *windowClient {
	return &windowClient{base: base, token: token, hc: &http.Client{Timeout: source.UsageReadTimeout + 2*time.Second}}
}

// errTrayGone says the tray process does not answer.
var errTrayGone = errors.New("the Codex Relay tray process does not answer")

// call sends one request and decodes the answer into out (nil: none).
func (c *windowClient) call(ctx context.Context, method, path string, q url.Values, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w (%v)", errTrayGone, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.NewDecoder(resp.Body).Decode(&e) != nil || e.Error.Message == "" {
			return fmt.Errorf("the tray process answered %s", resp.Status)
		}
		switch e.Error.Code {
		case source.CodeUsageOff:
			return source.ErrUsageOff
		case source.CodeUsageClosed:
			return source.ErrUsageClosed
		}
		return errors.New(e.Error.Message)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *windowClient) get(path string, q url.Values, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.call(ctx, http.MethodGet, path, q, out)
}

// Stats is A's snapshot (an empty one when A does not answer: the status says why).
func (c *windowClient) Stats() proxy.Snapshot {
	var s proxy.Snapshot
	c.get("/relay/stats", nil, &s)
	return s
}

// Traces are A's recent requests.
func (c *windowClient) Traces(limit int) []proxy.Trace {
	var t []proxy.Trace
	c.get("/relay/traces", url.Values{"limit": {strconv.Itoa(limit)}}, &t)
	return t
}

// Status is A's listener status; when A does not answer, a stopped one that says so.
func (c *windowClient) Status() app.ServiceStatus {
	var j source.StatusJSON
	if err := c.get("/relay/status", nil, &j); err != nil {
		return app.ServiceStatus{Err: err}
	}
	return j.Status()
}

func (c *windowClient) post(path string, q url.Values) error {
	// A pause drains the requests in flight (up to the drain timeout).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.call(ctx, http.MethodPost, path, q, nil)
}

func (c *windowClient) Pause()        { c.post("/relay/pause", nil) }
func (c *windowClient) Resume() error { return c.post("/relay/resume", nil) }
func (c *windowClient) SetListen(addr string) error {
	return c.post("/relay/listen", url.Values{"addr": {addr}})
}

func (c *windowClient) Summary(ctx context.Context, q ledger.Query) (ledger.Report, error) {
	var rep ledger.Report
	err := c.call(ctx, http.MethodGet, "/relay/usage/summary",
		url.Values{"since": {apiTime(q.Since)}, "until": {apiTime(q.Until)}, "by": {q.By}}, &rep)
	return rep, err
}

func (c *windowClient) Daily(ctx context.Context, since time.Time) ([]ledger.DayByAccount, error) {
	var days []ledger.DayByAccount
	err := c.call(ctx, http.MethodGet, "/relay/usage/daily", url.Values{"since": {apiTime(since)}}, &days)
	return days, err
}

func (c *windowClient) Burn(ctx context.Context, account string) (ledger.Burn, error) {
	var b ledger.Burn
	err := c.call(ctx, http.MethodGet, "/relay/usage/burn", url.Values{"account": {account}}, &b)
	return b, err
}

func (c *windowClient) Forecast(ctx context.Context, accounts []string, now time.Time) (ledger.Forecast, error) {
	var f ledger.Forecast
	err := c.call(ctx, http.MethodGet, "/relay/usage/forecast", url.Values{"account": accounts, "now": {apiTime(now)}}, &f)
	return f, err
}

package window

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
)

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

func apiTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

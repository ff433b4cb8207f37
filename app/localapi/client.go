package localapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// Client is the local API's client: one method a route of the table (and Health, the relay
// port's own). An error answer is an *Error (errors.Is matches what its code stands for: see
// errors.go); a request that got no answer returns the transport's error as it is (a
// *url.Error), so that a caller can tell "nothing was sent" from "no answer came".
type Client struct {
	base string
	auth Auth
	hc   *http.Client
}

// Answers are bounded: a few hundred traces are the largest.
const (
	maxAnswer      = 64 << 20
	maxErrorAnswer = 64 << 10
)

// NewClient is a client of the port at base ("http://127.0.0.1:7455") proving itself with
// auth (nil: nothing), each request bounded by timeout (0: by its context alone).
func NewClient(base string, auth Auth, timeout time.Duration) *Client {
	if auth == nil {
		auth = Bearer("")
	}
	return &Client{base: base, auth: auth, hc: &http.Client{Timeout: timeout}}
}

// Base is the port's address, as given.
func (c *Client) Base() string { return c.base }

// call sends one request and decodes the answer into out (nil: none).
func (c *Client) call(ctx context.Context, method, path string, q url.Values, out any) error {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	check := c.auth.Authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if check != nil {
		if err := check(resp); err != nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
			return err
		}
	}
	if resp.StatusCode/100 != 2 {
		return readError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(out); err != nil {
		return fmt.Errorf("the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// readError is an error answer as an *Error; one that is not in the OpenAI error shape says
// its status.
func readError(resp *http.Response) *Error {
	var v struct {
		Error *Error `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, maxErrorAnswer)).Decode(&v) != nil || v.Error == nil || v.Error.Message == "" {
		return &Error{Status: resp.StatusCode, Type: typeServer, Message: resp.Request.URL.Host + " answered " + resp.Status}
	}
	v.Error.Status = resp.StatusCode
	return v.Error
}

func get[T any](c *Client, ctx context.Context, path string, q url.Values) (T, error) {
	var v T
	err := c.call(ctx, http.MethodGet, path, q, &v)
	return v, err
}

func post[T any](c *Client, ctx context.Context, path string, q url.Values) (T, error) {
	var v T
	err := c.call(ctx, http.MethodPost, path, q, &v)
	return v, err
}

// apiTime is t as a query sends it ("" for the zero time: no bound).
func apiTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// Stats is GET /relay/stats.
func (c *Client) Stats(ctx context.Context) (proxy.Snapshot, error) {
	return get[proxy.Snapshot](c, ctx, "/relay/stats", nil)
}

// Traces is GET /relay/traces?limit=N.
func (c *Client) Traces(ctx context.Context, limit int) ([]proxy.Trace, error) {
	return get[[]proxy.Trace](c, ctx, "/relay/traces", url.Values{"limit": {strconv.Itoa(limit)}})
}

// TracesAfter is GET /relay/traces?limit=N&after=ID: the requests newer than ID ("" for all N).
func (c *Client) TracesAfter(ctx context.Context, limit int, after string) ([]proxy.Trace, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if after != "" {
		q.Set("after", after)
	}
	return get[[]proxy.Trace](c, ctx, "/relay/traces", q)
}

// Changes is GET /relay/changes?after=G&wait=W: it returns when the relay's generation differs
// from after, or after wait unchanged (wait 0: at once, whatever after). The client's own
// timeout does not bound it (ctx does, and the server's wait).
func (c *Client) Changes(ctx context.Context, after uint64, wait time.Duration) (uint64, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
		q.Set("wait", wait.String())
	}
	long := *c
	long.hc = &http.Client{Transport: c.hc.Transport}
	v, err := get[Changes](&long, ctx, "/relay/changes", q)
	return v.Generation, err
}

// Usage is GET /relay/usage: since as the command line writes it ("7d", "2026-11-01"; ""
// for all), by a grouping ("": by account).
func (c *Client) Usage(ctx context.Context, since, by string) (ledger.Report, error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	if by != "" {
		q.Set("by", by)
	}
	return get[ledger.Report](c, ctx, "/relay/usage", q)
}

// Summary is GET /relay/usage/summary.
func (c *Client) Summary(ctx context.Context, q ledger.Query) (ledger.Report, error) {
	return get[ledger.Report](c, ctx, "/relay/usage/summary",
		url.Values{"since": {apiTime(q.Since)}, "until": {apiTime(q.Until)}, "by": {q.By}})
}

// Daily is GET /relay/usage/daily.
func (c *Client) Daily(ctx context.Context, since time.Time) ([]ledger.DayByAccount, error) {
	return get[[]ledger.DayByAccount](c, ctx, "/relay/usage/daily", url.Values{"since": {apiTime(since)}})
}

// Burn is GET /relay/usage/burn.
func (c *Client) Burn(ctx context.Context, account string) (ledger.Burn, error) {
	return get[ledger.Burn](c, ctx, "/relay/usage/burn", url.Values{"account": {account}})
}

// Forecast is GET /relay/usage/forecast.
func (c *Client) Forecast(ctx context.Context, accounts []string, now time.Time) (ledger.Forecast, error) {
	return get[ledger.Forecast](c, ctx, "/relay/usage/forecast", url.Values{"account": accounts, "now": {apiTime(now)}})
}

// RedeemCredit is POST /relay/accounts/{name}/redeem-credit.
func (c *Client) RedeemCredit(ctx context.Context, account string) (proxy.RedeemResult, error) {
	return post[proxy.RedeemResult](c, ctx, "/relay/accounts/"+url.PathEscape(account)+"/redeem-credit", nil)
}

// Pause is POST /relay/pause.
func (c *Client) Pause(ctx context.Context) (PauseState, error) {
	return post[PauseState](c, ctx, "/relay/pause", nil)
}

// Resume is POST /relay/resume.
func (c *Client) Resume(ctx context.Context) (PauseState, error) {
	return post[PauseState](c, ctx, "/relay/resume", nil)
}

// Status is GET /relay/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	return get[Status](c, ctx, "/relay/status", nil)
}

// SetListen is POST /relay/listen?addr=HOST:PORT.
func (c *Client) SetListen(ctx context.Context, addr string) (Status, error) {
	return post[Status](c, ctx, "/relay/listen", url.Values{"addr": {addr}})
}

// Health is the relay port's GET /health (no route of the table: the proxy answers it
// before any key is asked for).
func (c *Client) Health(ctx context.Context) (Health, error) {
	return get[Health](c, ctx, "/health", nil)
}

// Package localapi is Codex Relay's local API: the /relay/* routes through which the
// programs of a settings folder read and steer its running relay (the command line, the first
// run's test, redeem, pause, and the window process), and the one client they use.
//
// The route table below is the API: each route's method and path, the backend part that
// serves it, what its caller must have proved, and one line of what it answers. Handler serves
// the table on a port from a Backend: the relay's port (the proxy hands it /relay/ after its
// loopback guards, the local key and the instance signature) and the tray's window port
// (behind WithToken). A route whose part the port's backend lacks answers 404 not_served.
// Every error answer is {"error":{"message","type","code","param"}} (writeError, the only
// writer of one); its code says what happened, as the sentinels in errors.go list.
//
// Client is the other side, one method a route, its authentication pluggable (Auth): the
// instance signature for the folder's programs (Signed), a bearer token for the first run's
// test through the relay port (the local key) and for the window process (the window token).
package localapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// Route is one route of the local API.
type Route struct {
	Method, Path string // Path in http.ServeMux's syntax: {name} is one path segment
	Query        string // the query it reads, as the documentation shows it
	Doc          string // what it answers, in one line
	// Proof is what its caller must have proved beyond the port's guard; Denied says so
	// when it did not.
	Proof  Proof
	Denied string
	part   part
	serve  func(b *Backend, r *http.Request) (any, *Error)
}

// part is the backend part a route needs.
type part int

const (
	partRelay part = iota
	partCredits
	partPause
	partListener
	partUsage
)

// routes is the local API. Times in a query are RFC 3339 (with nanoseconds, as the client
// sends them); an empty one is no bound.
var routes = []Route{
	{Method: "GET", Path: "/relay/stats", part: partRelay, serve: stats,
		Doc: "proxy.Snapshot: the live snapshot (catalog figures, serialization, requests, accounts, reset credits)"},
	{Method: "GET", Path: "/relay/traces", Query: "limit=N&after=ID", part: partRelay, serve: traces,
		Doc: "[]proxy.Trace: the N (default 50) most recent requests, newest first; with after, only those newer than request ID (all N when ID is no longer kept)"},
	{Method: "GET", Path: "/relay/changes", Query: "after=G&wait=25s", part: partRelay, serve: changes,
		Doc: "Changes: the generation of the relay's state once it differs from G (at once without G), or after wait (at most 60 s) unchanged: a window waits here instead of polling"},
	{Method: "GET", Path: "/relay/usage", Query: "since=7d&by=account", part: partUsage, serve: usage,
		Doc: "ledger.Report: the usage ledger's totals since a duration back or a date, by account, model, project, ..."},
	{Method: "GET", Path: "/relay/usage/summary", Query: "since=T&until=T&by=G", part: partUsage, serve: usageSummary,
		Doc: "ledger.Report: the usage ledger's totals between two times"},
	{Method: "GET", Path: "/relay/usage/daily", Query: "since=T", part: partUsage, serve: usageDaily,
		Doc: "[]ledger.DayByAccount: tokens per UTC day and account"},
	{Method: "GET", Path: "/relay/usage/burn", Query: "account=NAME", part: partUsage, serve: usageBurn,
		Doc: "ledger.Burn: an account's tokens per percent of its quota windows"},
	{Method: "GET", Path: "/relay/usage/forecast", Query: "account=NAME...&now=T", part: partUsage, serve: usageForecast,
		Doc: "ledger.Forecast: when the accounts' quotas run out at the recent pace"},
	{Method: "POST", Path: "/relay/accounts/{name}/redeem-credit", part: partCredits, serve: redeem,
		Proof: ProofKey, Denied: "spending a banked reset needs the relay's local key (or `codexrelay accounts redeem`, which signs its request)",
		Doc: "proxy.RedeemResult: spends the account's banked reset that expires first"},
	{Method: "POST", Path: "/relay/pause", part: partPause, serve: pauseRoute(true),
		Proof: ProofFolder, Denied: "pausing or resuming the relay needs a request signed by its settings folder's programs (`codexrelay pause`, `codexrelay resume`)",
		Doc: "PauseState: clients get 503 relay_paused until resumed; requests under way finish"},
	{Method: "POST", Path: "/relay/resume", part: partPause, serve: pauseRoute(false),
		Proof: ProofFolder, Denied: "pausing or resuming the relay needs a request signed by its settings folder's programs (`codexrelay pause`, `codexrelay resume`)",
		Doc: "PauseState: serves again after a pause"},
	{Method: "GET", Path: "/relay/status", part: partListener, serve: status,
		Doc: "Status: the tray's listener (where, running, paused, why not)"},
	{Method: "POST", Path: "/relay/listen", Query: "addr=HOST:PORT", part: partListener, serve: listen,
		Proof: ProofFolder, Denied: "moving the relay's listener needs a request of its settings folder's programs",
		Doc: "Status: saves the listen address and moves the listener there"},
}

// Routes is the route table (a copy), for documentation and tests.
func Routes() []Route { return slices.Clone(routes) }

// notServed is the answer of a route whose part the port's backend lacks.
func notServed(rt *Route) *Error {
	e := &Error{Status: http.StatusNotFound, Type: typeInvalid, Code: "not_served"}
	what := rt.Method + " " + rt.Path
	switch rt.part {
	case partUsage:
		return noLedger()
	case partListener:
		e.Message = what + " is not served on this port: only the tray app steers its listener, on the port it gives its windows"
	default:
		e.Message = what + " is not served on this port"
	}
	return e
}

// noLedger is the answer of a usage route where no ledger is kept.
func noLedger() *Error {
	return &Error{Status: http.StatusNotFound, Type: typeInvalid, Code: "usage_unavailable",
		Message: "this relay keeps no usage ledger (it is off, or could not be opened: see the log)"}
}

// denied is the answer of a route whose caller did not prove enough.
func denied(rt *Route) *Error {
	code := "unsigned_request"
	if rt.Proof == ProofKey {
		code = "invalid_api_key"
	}
	return &Error{Status: http.StatusUnauthorized, Type: typeInvalid, Code: code, Message: rt.Denied}
}

func stats(b *Backend, _ *http.Request) (any, *Error) { return b.Relay.Stats(), nil }

func traces(b *Backend, r *http.Request) (any, *Error) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, invalid("invalid_limit", "limit", "limit must be a positive integer")
		}
		limit = n
	}
	list := b.Relay.Traces(limit)
	if after := r.URL.Query().Get("after"); after != "" {
		if i := slices.IndexFunc(list, func(t proxy.Trace) bool { return t.ID == after }); i >= 0 {
			list = list[:i]
		}
	}
	return list, nil
}

// changesWait bounds how long GET /relay/changes waits (and is its default), well inside the
// idle timeouts of the ports that serve it.
const (
	changesWait    = 25 * time.Second
	changesMaxWait = time.Minute
)

// changes answers the relay's generation once it differs from the one the caller showed
// (after), or when wait ends with it unchanged; without after, at once.
func changes(b *Backend, r *http.Request) (any, *Error) {
	q := r.URL.Query()
	gen, ch := b.Relay.Changes()
	if q.Get("after") == "" {
		return Changes{Generation: gen}, nil
	}
	after, err := strconv.ParseUint(q.Get("after"), 10, 64)
	if err != nil {
		return nil, invalid("invalid_value", "after", "after must be a generation a previous answer gave (a non-negative integer)")
	}
	wait := changesWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, invalid("invalid_value", "wait", "wait must be a duration such as 25s")
		}
		wait = min(d, changesMaxWait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for gen == after {
		select {
		case <-ch:
		case <-t.C:
			return Changes{Generation: gen}, nil
		case <-r.Context().Done():
			return Changes{Generation: gen}, nil // nobody reads it
		}
		gen, ch = b.Relay.Changes()
	}
	return Changes{Generation: gen}, nil
}

// usageTimeout bounds one read of the ledger.
const usageTimeout = 10 * time.Second

// usage is the command line's summary: since a duration back or a date, grouped by one of
// ledger.Groupings. Without a ledger it answers 404 usage_unavailable, as it always has.
func usage(b *Backend, r *http.Request) (any, *Error) {
	q := r.URL.Query()
	since, err := ledger.ParseSince(q.Get("since"), time.Now())
	if err != nil {
		return nil, invalid("invalid_value", "since", err.Error())
	}
	by := q.Get("by")
	if by == "" {
		by = "account"
	}
	if !slices.Contains(ledger.Groupings, by) {
		return nil, invalid("invalid_value", "by", fmt.Sprintf("by=%q: group by one of %s", by, strings.Join(ledger.Groupings, ", ")))
	}
	ctx, cancel := context.WithTimeout(r.Context(), usageTimeout)
	defer cancel()
	rep, err := b.Usage().Summary(ctx, ledger.Query{Since: since, By: by})
	switch {
	case errors.Is(err, ErrUsageOff) || errors.Is(err, ErrUsageClosed):
		return nil, noLedger()
	case err != nil:
		return nil, &Error{Status: http.StatusServiceUnavailable, Type: typeServer, Code: "usage_unavailable", Message: "the usage ledger cannot be read: " + err.Error()}
	}
	return rep, nil
}

// usageAnswer is a read of the ledger as an answer: its errors 503, with the code of the
// ledger's state (usage_off, usage_closed) or usage_failed.
func usageAnswer(v any, err error) (any, *Error) {
	if err != nil {
		return nil, errorOf(err, Error{Status: http.StatusServiceUnavailable, Type: typeServer, Code: "usage_failed"})
	}
	return v, nil
}

// times reads the named RFC 3339 times of r's query ("" is the zero time).
func times(r *http.Request, names ...string) ([]time.Time, *Error) {
	out := make([]time.Time, len(names))
	for i, name := range names {
		v := r.URL.Query().Get(name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, invalid("invalid_value", name, name+" must be an RFC 3339 time: "+err.Error())
		}
		out[i] = t
	}
	return out, nil
}

func usageSummary(b *Backend, r *http.Request) (any, *Error) {
	t, e := times(r, "since", "until")
	if e != nil {
		return nil, e
	}
	ctx, cancel := context.WithTimeout(r.Context(), usageTimeout)
	defer cancel()
	return usageAnswer(b.Usage().Summary(ctx, ledger.Query{Since: t[0], Until: t[1], By: r.URL.Query().Get("by")}))
}

func usageDaily(b *Backend, r *http.Request) (any, *Error) {
	t, e := times(r, "since")
	if e != nil {
		return nil, e
	}
	ctx, cancel := context.WithTimeout(r.Context(), usageTimeout)
	defer cancel()
	return usageAnswer(b.Usage().Daily(ctx, t[0]))
}

func usageBurn(b *Backend, r *http.Request) (any, *Error) {
	ctx, cancel := context.WithTimeout(r.Context(), usageTimeout)
	defer cancel()
	return usageAnswer(b.Usage().Burn(ctx, r.URL.Query().Get("account")))
}

func usageForecast(b *Backend, r *http.Request) (any, *Error) {
	t, e := times(r, "now")
	if e != nil {
		return nil, e
	}
	ctx, cancel := context.WithTimeout(r.Context(), usageTimeout)
	defer cancel()
	return usageAnswer(b.Usage().Forecast(ctx, r.URL.Query()["account"], t[0]))
}

// redeem answers 404 account_not_found, 400 not_chatgpt, 409 no_reset_credit, 504
// redeem_pending (no answer from the backend: trying again reuses the request) or 502
// redeem_failed; the messages are the proxy's, upstream text in them redacted.
func redeem(b *Backend, r *http.Request) (any, *Error) {
	res, err := b.Credits.RedeemCredit(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, errorOf(err, Error{Status: http.StatusBadGateway, Type: typeServer, Code: "redeem_failed"})
	}
	return res, nil
}

func pauseRoute(pause bool) func(*Backend, *http.Request) (any, *Error) {
	return func(b *Backend, _ *http.Request) (any, *Error) {
		st, err := b.Pause.SetPaused(pause)
		if err != nil {
			return nil, &Error{Status: http.StatusInternalServerError, Type: typeServer, Code: "resume_failed", Message: err.Error()}
		}
		return st, nil
	}
}

func status(b *Backend, _ *http.Request) (any, *Error) { return b.Listener.Status(), nil }

func listen(b *Backend, r *http.Request) (any, *Error) {
	if err := b.Listener.SetListen(r.URL.Query().Get("addr")); err != nil {
		return nil, &Error{Status: http.StatusConflict, Type: typeInvalid, Code: "listen_failed", Param: "addr", Message: err.Error()}
	}
	return b.Listener.Status(), nil
}

package localapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

var testNow = time.Date(2026, 11, 3, 14, 30, 0, 123456789, time.UTC)

// fakeRelay answers a fixed snapshot and traces.
type fakeRelay struct {
	snap   proxy.Snapshot
	traces []proxy.Trace
	sig    *proxy.Signal // its changes
}

func (f fakeRelay) Stats() proxy.Snapshot              { return f.snap }
func (f fakeRelay) Changes() (uint64, <-chan struct{}) { return f.sig.Changes() }
func (f fakeRelay) Traces(n int) []proxy.Trace {
	return f.traces[:min(n, len(f.traces))]
}

func sampleRelay() fakeRelay {
	return fakeRelay{
		snap: proxy.Snapshot{Listen: "127.0.0.1:7455", UptimeMs: 42, SettingsGeneration: 7, Next: "work",
			Catalog:  proxy.CatalogStats{AgeMs: 12, Models: 3, SWREnabled: true, StaleMaxAgeMs: 1_800_000, TTLMs: 600_000},
			Requests: proxy.RequestStats{Total: 9, Errors: 1},
			Accounts: []proxy.AccountStats{{Name: "work", Kind: proxy.KindChatGPT, State: proxy.StateReady}}},
		traces: []proxy.Trace{{ID: "req_2", Model: "gpt-5", Status: 200}, {ID: "req_1", Model: "gpt-5", Status: 429}},
		sig:    new(proxy.Signal),
	}
}

// fakeCredits redeems what it is told to, recording the accounts asked for.
type fakeCredits struct {
	mu    sync.Mutex
	res   proxy.RedeemResult
	err   error
	asked []string
}

func (f *fakeCredits) RedeemCredit(_ context.Context, account string) (proxy.RedeemResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, account)
	if f.err != nil {
		return proxy.RedeemResult{}, f.err
	}
	r := f.res
	r.Account = account
	return r, nil
}

// fakeControl is a listener that records what it was asked.
type fakeControl struct {
	mu        sync.Mutex
	st        localapi.Status
	listen    string
	resumeErr error
	listenErr error
}

func (f *fakeControl) SetPaused(pause bool) (localapi.PauseState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !pause && f.resumeErr != nil {
		return localapi.PauseState{Paused: f.st.Paused}, f.resumeErr
	}
	was := f.st.Paused
	f.st.Paused, f.st.Running = pause, !pause
	return localapi.PauseState{Paused: pause, Changed: was != pause}, nil
}

func (f *fakeControl) Status() localapi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeControl) SetListen(addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listenErr != nil {
		return f.listenErr
	}
	f.listen, f.st.Addr = addr, addr
	return nil
}

// fakeUsage answers fixed reports and records the queries.
type fakeUsage struct {
	mu       sync.Mutex
	err      error
	queries  []ledger.Query
	since    time.Time
	accounts []string
	now      time.Time
}

func (f *fakeUsage) Summary(_ context.Context, q ledger.Query) (ledger.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if f.err != nil {
		return ledger.Report{}, f.err
	}
	return ledger.Report{Query: q, Groups: []ledger.Group{{Key: "work", Totals: ledger.Totals{Requests: 3, InputTokens: 1200, CostUSD: 0.5}}},
		PricesCheckedAt: "2026-10-01", TierMultipliers: map[string]float64{"priority": 2}}, nil
}

func (f *fakeUsage) Daily(_ context.Context, since time.Time) ([]ledger.DayByAccount, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.since = since
	if f.err != nil {
		return nil, f.err
	}
	return []ledger.DayByAccount{{Day: "2026-11-02", Account: "work", Totals: ledger.Totals{OutputTokens: 99}}}, nil
}

func (f *fakeUsage) Burn(_ context.Context, account string) (ledger.Burn, error) {
	if f.err != nil {
		return ledger.Burn{}, f.err
	}
	return ledger.Burn{Account: account, PrimaryTokensPerPercent: 212_000}, nil
}

func (f *fakeUsage) Forecast(_ context.Context, accounts []string, now time.Time) (ledger.Forecast, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accounts, f.now = accounts, now
	if f.err != nil {
		return ledger.Forecast{}, f.err
	}
	return ledger.Forecast{Now: now, TokensLastHour: 4_100_000, RunsOut: now.Add(time.Hour), Known: accounts}, nil
}

// backend is a backend with every part, over fakes.
type backend struct {
	relay   fakeRelay
	credits *fakeCredits
	control *fakeControl
	usage   *fakeUsage
}

func newBackend() *backend {
	return &backend{relay: sampleRelay(), credits: &fakeCredits{res: proxy.RedeemResult{Code: "reset", WindowsReset: 2, RequestID: "rr_1", RedeemedAt: testNow}},
		control: &fakeControl{st: localapi.Status{Addr: "127.0.0.1:7455", Running: true, Warning: "pinned"}}, usage: &fakeUsage{}}
}

func (b *backend) full() localapi.Backend {
	return localapi.Backend{Relay: b.relay, Credits: b.credits, Pause: b.control, Listener: b.control,
		Usage: func() localapi.Usage { return b.usage }}
}

// errorAnswer is an answer in the OpenAI error shape.
type errorAnswer struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// send makes one request and returns its status and, for an error answer, the error, which
// it checks is in the OpenAI error shape.
func send(t *testing.T, req *http.Request) (int, *errorAnswer) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, nil
	}
	var e errorAnswer
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == "" {
		t.Fatalf("%s %s: %d is not in the OpenAI error shape (%v): %+v", req.Method, req.URL.Path, resp.StatusCode, err, e)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", req.Method, req.URL.Path, ct)
	}
	return resp.StatusCode, &e
}

// routeRequest is a request for route rt at base, with its path filled in.
func routeRequest(t *testing.T, base string, rt localapi.Route) *http.Request {
	t.Helper()
	path := strings.Replace(rt.Path, "{name}", "work", 1)
	req, err := http.NewRequest(rt.Method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func describe(rt localapi.Route) string { return fmt.Sprintf("%s %s", rt.Method, rt.Path) }

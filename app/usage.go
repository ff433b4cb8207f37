package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// The usage ledger while the relay serves: every finished request becomes a row (through the
// proxy's trace hook, which only queues), the ChatGPT accounts' quota readings are sampled,
// and /relay/usage answers from it. A ledger that cannot be opened is reported and the relay
// serves without one.

// UsageSettings configure the usage ledger.
type UsageSettings struct {
	// Off stops recording (the database is kept).
	Off bool `json:"off,omitempty"`
	// RetentionDays is how long request rows are kept (default 400); daily totals stay.
	RetentionDays int `json:"retention_days,omitempty"`
	// Prices override the built-in price table, by model, in USD per million tokens.
	Prices map[string]ledger.Price `json:"prices,omitempty"`
}

// usageState is the App's ledger while a service runs.
type usageState struct {
	mu       sync.Mutex
	l        *ledger.Ledger
	users    int // services running
	err      error
	stop     chan struct{}
	sampled  map[string]time.Time // per account, the quota reading last recorded
	settings UsageSettings
}

// LedgerPath is the usage database: next to the settings when a settings folder was given
// (tests, portable set-ups), else $XDG_DATA_HOME/codexrelay/usage.db.
func (a *App) LedgerPath() string {
	if a.opt.DataDir != "" {
		return filepath.Join(a.opt.DataDir, "usage.db")
	}
	if a.opt.ConfigDir != DefaultConfigDir() {
		return filepath.Join(a.opt.ConfigDir, "usage.db")
	}
	return ledger.DefaultPath()
}

// Ledger is the open usage ledger (nil when none: off, not serving, or it failed to open).
func (a *App) Ledger() *ledger.Ledger {
	a.usage.mu.Lock()
	defer a.usage.mu.Unlock()
	return a.usage.l
}

// LedgerError says why the ledger could not be opened (nil when it is open or off).
func (a *App) LedgerError() error {
	a.usage.mu.Lock()
	defer a.usage.mu.Unlock()
	return a.usage.err
}

// startUsage opens the ledger for a service that starts (the first one opens it).
func (a *App) startUsage() {
	u := &a.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	u.users++
	if u.users == 1 {
		a.openLedgerLocked(a.Settings().Usage)
	}
}

// stopUsage closes the ledger when the last service stops: what is queued is written.
func (a *App) stopUsage() {
	u := &a.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.users == 0 {
		return
	}
	u.users--
	if u.users == 0 {
		a.closeLedgerLocked()
	}
}

// applyUsage follows a change of the usage settings while the ledger is in use.
func (a *App) applyUsage(prev, next UsageSettings) {
	if reflect.DeepEqual(prev, next) {
		return
	}
	u := &a.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.users == 0 {
		return
	}
	a.closeLedgerLocked()
	a.openLedgerLocked(next)
}

func (a *App) openLedgerLocked(s UsageSettings) {
	u := &a.usage
	u.settings, u.err = s, nil
	if s.Off {
		return
	}
	opt := ledger.Options{Path: a.LedgerPath(), Now: a.opt.Now, Prices: s.Prices}
	if s.RetentionDays > 0 {
		opt.Retention = time.Duration(s.RetentionDays) * 24 * time.Hour
	}
	l, err := ledger.Open(opt)
	if err != nil {
		u.err = fmt.Errorf("the usage ledger %s cannot be opened: %w; the relay serves without it", opt.Path, err)
		a.log.Error("usage ledger unavailable", "path", opt.Path, "error", err)
		return
	}
	if st := l.Stats(); st.Recovered != "" {
		a.log.Warn("usage ledger was damaged and set aside", "detail", st.Recovered)
	}
	u.l = l
	a.Proxy.SetTraceHook(func(t proxy.Trace) { l.Record(LedgerRow(t)) })
	a.Proxy.SetUsageHandler(usageHandler{l})
	u.stop, u.sampled = make(chan struct{}), map[string]time.Time{}
	go a.sampleQuotas(l, u.stop)
}

func (a *App) closeLedgerLocked() {
	u := &a.usage
	if u.l == nil {
		return
	}
	a.Proxy.SetTraceHook(nil)
	a.Proxy.SetUsageHandler(nil)
	close(u.stop)
	if err := u.l.Close(); err != nil {
		a.log.Error("usage ledger: closing", "error", err)
	}
	u.l = nil
}

// LedgerRow is the ledger row of a finished request.
func LedgerRow(t proxy.Trace) ledger.Row {
	r := ledger.Row{
		Time: t.Time.Add(time.Duration(t.LatencyBreakdown.TotalMs * float64(time.Millisecond))), Account: t.Account,
		Model: t.Model, ServedModel: t.ResolvedModel, Route: t.Route, Transport: t.Transport, Outcome: t.Outcome,
		Status: t.Status, LatencyMs: t.LatencyBreakdown.TotalMs, Session: t.Session, Project: t.Project,
		ServiceTier: t.ServiceTier, ServiceTierOmitted: t.ServiceTierOmitted,
	}
	if u := t.Usage; u != nil {
		r.InputTokens, r.CachedTokens, r.OutputTokens, r.ReasoningTokens = u.InputTokens, u.CachedTokens, u.OutputTokens, u.ReasoningTokens
	}
	return r
}

// quotaSampleEvery is how often the quota readings the relay fetched are looked at; a reading
// is recorded once (by its fetch time).
const quotaSampleEvery = 30 * time.Second

func (a *App) sampleQuotas(l *ledger.Ledger, stop chan struct{}) {
	t := time.NewTicker(quotaSampleEvery)
	defer t.Stop()
	for {
		a.sampleQuotasOnce(l)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// sampleQuotasOnce records the quota readings fetched since the last look.
func (a *App) sampleQuotasOnce(l *ledger.Ledger) {
	for _, acc := range a.Proxy.Stats().Accounts {
		q := acc.Quota
		if q == nil || q.FetchedAt.IsZero() {
			continue
		}
		a.usage.mu.Lock()
		seen := a.usage.sampled[acc.Name].Equal(q.FetchedAt)
		if !seen && a.usage.sampled != nil {
			a.usage.sampled[acc.Name] = q.FetchedAt
		}
		a.usage.mu.Unlock()
		if seen {
			continue
		}
		l.RecordQuota(ledger.QuotaReading{Account: acc.Name, Time: q.FetchedAt,
			PrimaryUsedPercent: q.PrimaryUsedPercent, PrimaryResetsAt: q.PrimaryResetsAt,
			SecondaryUsedPercent: q.SecondaryUsedPercent, SecondaryResetsAt: q.SecondaryResetsAt})
	}
}

// ParseSince reads a --since or ?since= value: a duration back from now ("7d", "36h", "90m")
// or a date ("2026-11-01", from its start in UTC).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration back from now (7d, 36h) nor a date (2026-11-01)", s)
}

// usageHandler serves GET /relay/usage?since=7d&by=account: the ledger's summary as JSON.
type usageHandler struct{ l *ledger.Ledger }

func (h usageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	since, err := ParseSince(q.Get("since"), time.Now())
	by := q.Get("by")
	if by == "" {
		by = "account"
	}
	if err == nil && !slices.Contains(ledger.Groupings, by) {
		err = fmt.Errorf("by=%q: group by one of %s", by, strings.Join(ledger.Groupings, ", "))
	}
	if err != nil {
		writeUsageError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	rep, err := h.l.Summary(ctx, ledger.Query{Since: since, By: by})
	if err != nil {
		writeUsageError(w, http.StatusServiceUnavailable, "server_error", "usage_unavailable", "the usage ledger cannot be read: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rep)
}

// writeUsageError answers in the OpenAI error shape, as the relay's other routes do.
func writeUsageError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": typ, "code": code, "message": msg}})
}

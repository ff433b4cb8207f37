package relay

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// The usage ledger while the relay serves: every finished request becomes a row (through the
// proxy's trace hook, which only queues), the ChatGPT accounts' quota readings are sampled,
// and the local API's usage routes answer from it (Usage). A ledger that cannot be opened is
// reported and the relay serves without one.

// usageState is the relay's ledger while a service runs.
type usageState struct {
	mu       sync.Mutex
	l        *ledger.Ledger
	users    int // services running
	err      error
	stop     chan struct{}
	sampled  map[string]time.Time // per account, the quota reading last recorded
	settings app.UsageSettings
}

// Ledger is the open usage ledger (nil when none: off, not serving, or it failed to open).
func (r *Relay) Ledger() *ledger.Ledger {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return r.usage.l
}

// LedgerError says why the ledger could not be opened (nil when it is open or off).
func (r *Relay) LedgerError() error {
	r.usage.mu.Lock()
	defer r.usage.mu.Unlock()
	return r.usage.err
}

// startUsage opens the ledger for a service that starts (the first one opens it).
func (r *Relay) startUsage() {
	u := &r.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	u.users++
	if u.users == 1 {
		r.openLedgerLocked(r.Settings().Usage)
	}
}

// stopUsage closes the ledger when the last service stops: what is queued is written.
func (r *Relay) stopUsage() {
	u := &r.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.users == 0 {
		return
	}
	u.users--
	if u.users == 0 {
		r.closeLedgerLocked()
	}
}

// applyUsage follows a change of the usage settings while the ledger is in use.
func (r *Relay) applyUsage(prev, next app.UsageSettings) {
	if reflect.DeepEqual(prev, next) {
		return
	}
	u := &r.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.users == 0 {
		return
	}
	r.closeLedgerLocked()
	r.openLedgerLocked(next)
}

func (r *Relay) openLedgerLocked(s app.UsageSettings) {
	u := &r.usage
	u.settings, u.err = s, nil
	if s.Off {
		return
	}
	opt := ledger.Options{Path: r.LedgerPath(), Now: r.Now, Prices: s.Prices}
	if s.RetentionDays > 0 {
		opt.Retention = time.Duration(s.RetentionDays) * 24 * time.Hour
	}
	l, err := ledger.Open(opt)
	if err != nil {
		u.err = fmt.Errorf("the usage ledger %s cannot be opened: %w; the relay serves without it", opt.Path, err)
		r.Log().Error("usage ledger unavailable", "path", opt.Path, "error", err)
		return
	}
	if st := l.Stats(); st.Recovered != "" {
		r.Log().Warn("usage ledger was damaged and set aside", "detail", st.Recovered)
	}
	u.l = l
	r.Proxy.SetTraceHook(func(t proxy.Trace) {
		// Codex's own ChatGPT calls (its limits, plugins, settings) and routes the relay does
		// not serve are no account's work: the ledger keeps what the accounts served.
		if t.Background() || t.Route == proxy.RouteUnserved {
			return
		}
		l.Record(LedgerRow(t))
	})
	u.stop, u.sampled = make(chan struct{}), map[string]time.Time{}
	go r.sampleQuotas(l, u.stop)
}

func (r *Relay) closeLedgerLocked() {
	u := &r.usage
	if u.l == nil {
		return
	}
	r.Proxy.SetTraceHook(nil)
	close(u.stop)
	if err := u.l.Close(); err != nil {
		r.Log().Error("usage ledger: closing", "error", err)
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

// quotaSampleEvery is how often, at most, the quota readings the relay fetched are looked at;
// a reading is recorded once (by its fetch time).
const quotaSampleEvery = 30 * time.Second

// sampleQuotas looks at the relay's quota readings when its state changed (a reading is one
// change), at most every quotaSampleEvery, until stop: an idle relay wakes it never.
func (r *Relay) sampleQuotas(l *ledger.Ledger, stop chan struct{}) {
	for {
		_, changed := r.Proxy.Changes()
		r.sampleQuotasOnce(l)
		select {
		case <-stop:
			return
		case <-changed:
		}
		select {
		case <-stop:
			return
		case <-time.After(quotaSampleEvery):
		}
	}
}

// sampleQuotasOnce records the quota readings fetched since the last look.
func (r *Relay) sampleQuotasOnce(l *ledger.Ledger) {
	for _, acc := range r.Proxy.Stats().Accounts {
		q := acc.Quota
		if q == nil || q.FetchedAt.IsZero() {
			continue
		}
		r.usage.mu.Lock()
		seen := r.usage.sampled[acc.Name].Equal(q.FetchedAt)
		if !seen && r.usage.sampled != nil {
			r.usage.sampled[acc.Name] = q.FetchedAt
		}
		r.usage.mu.Unlock()
		if seen {
			continue
		}
		l.RecordQuota(ledger.QuotaReading{Account: acc.Name, Time: q.FetchedAt,
			PrimaryUsedPercent: q.PrimaryUsedPercent, PrimaryResetsAt: q.PrimaryResetsAt,
			SecondaryUsedPercent: q.SecondaryUsedPercent, SecondaryResetsAt: q.SecondaryResetsAt})
	}
}

// Usage is the usage ledger as the local API's usage routes read it, looked up at each read
// (it opens and closes with the relay service and the settings): without one to read, a read
// returns localapi.ErrUsageOff (switched off), localapi.ErrUsageClosed (not open: this process
// does not serve) or, wrapping ErrUsageClosed, why it failed to open.
func (r *Relay) Usage() localapi.Usage { return ledgerUsage{r} }

type ledgerUsage struct{ r *Relay }

// ledger is the ledger to read now, or why there is none.
func (u ledgerUsage) ledger() (*ledger.Ledger, error) {
	if u.r.Settings().Usage.Off {
		return nil, localapi.ErrUsageOff
	}
	if err := u.r.LedgerError(); err != nil {
		return nil, fmt.Errorf("%w: %w", localapi.ErrUsageClosed, err)
	}
	if l := u.r.Ledger(); l != nil {
		return l, nil
	}
	return nil, localapi.ErrUsageClosed
}

// closedAs maps the ledger's ErrClosed (it closed between the look-up and the read) to
// localapi.ErrUsageClosed.
func closedAs(err error) error {
	if errors.Is(err, ledger.ErrClosed) {
		return localapi.ErrUsageClosed
	}
	return err
}

func (u ledgerUsage) Summary(ctx context.Context, q ledger.Query) (ledger.Report, error) {
	l, err := u.ledger()
	if err != nil {
		return ledger.Report{}, err
	}
	rep, err := l.Summary(ctx, q)
	return rep, closedAs(err)
}

func (u ledgerUsage) Daily(ctx context.Context, since time.Time) ([]ledger.DayByAccount, error) {
	l, err := u.ledger()
	if err != nil {
		return nil, err
	}
	days, err := l.Daily(ctx, since)
	return days, closedAs(err)
}

func (u ledgerUsage) Burn(ctx context.Context, account string) (ledger.Burn, error) {
	l, err := u.ledger()
	if err != nil {
		return ledger.Burn{}, err
	}
	b, err := l.Burn(ctx, account)
	return b, closedAs(err)
}

func (u ledgerUsage) Forecast(ctx context.Context, accounts []string, now time.Time) (ledger.Forecast, error) {
	l, err := u.ledger()
	if err != nil {
		return ledger.Forecast{}, err
	}
	f, err := l.Forecast(ctx, accounts, now)
	return f, closedAs(err)
}

package source

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
)

// UsageSource is the usage ledger as the Usage window and the tray read it: the local API's
// (localapi.Usage). The real one reads the relay's ledger (RelayUsage, looked up at each call:
// it opens and closes with the listener and the settings), the window process's reads the
// tray's over the window API, and FixedUsage serves prepared rows. Every method may block on
// the database: call them off the UI thread.
//
// Without a ledger to read, each method returns ErrUsageOff (switched off in the settings) or
// ErrUsageClosed (not open: the relay is not serving; wrapping the reason when it failed to
// open).
type UsageSource = localapi.Usage

var (
	// ErrUsageOff says the usage ledger is switched off in the settings.
	ErrUsageOff = localapi.ErrUsageOff
	// ErrUsageClosed says the usage ledger is on but not open: it opens while the relay serves.
	ErrUsageClosed = localapi.ErrUsageClosed
)

// RelayUsage is the UsageSource of the running relay: its ledger, looked up at each call
// (relay.Relay.Usage, which the local API's usage routes read too).
func RelayUsage(r *relay.Relay) UsageSource { return r.Usage() }

// UsageRow is one prepared request (or a day's worth of them) for FixedUsage.
type UsageRow struct {
	At                      time.Time
	Account, Model, Project string
	// Tier is the service tier the request asked for ("" none, "priority" for Fast mode).
	Tier          string
	ledger.Totals // CostUSD as the ledger would price it (priority at its multiple); CacheHitRatio is computed
}

// FixedUsage is a UsageSource over prepared rows, burn rates and a forecast (screenshots,
// tests). It adds rows up the way the ledger does; Off and Err stand for a ledger switched
// off or failed.
type FixedUsage struct {
	Rows []UsageRow
	// Burns are the accounts' burn rates, by account.
	Burns map[string]ledger.Burn
	// Pool is the forecast Forecast answers (its Now set to the time asked for).
	Pool ledger.Forecast
	// Unpriced are the models Summary reports without a price.
	Unpriced []string
	Off      bool
	Err      error
}

func (f *FixedUsage) fail() error {
	switch {
	case f.Off:
		return ErrUsageOff
	case f.Err != nil:
		return f.Err
	}
	return nil
}

// Summary adds up the rows in [q.Since, q.Until) by q.By, sorted as the ledger sorts them.
func (f *FixedUsage) Summary(_ context.Context, q ledger.Query) (ledger.Report, error) {
	if err := f.fail(); err != nil {
		return ledger.Report{}, err
	}
	if q.By == "" {
		q.By = "account"
	}
	rep := ledger.Report{Query: q, PricesCheckedAt: ledger.PricesCheckedAt, TierMultipliers: ledger.TierMultipliers(),
		UnpricedModels: slices.Clone(f.Unpriced)}
	byKey := map[string]*ledger.Group{}
	var keys []string
	for _, r := range f.Rows {
		if r.At.Before(q.Since) || (!q.Until.IsZero() && !r.At.Before(q.Until)) {
			continue
		}
		var key string
		switch q.By {
		case "account":
			key = r.Account
		case "model":
			key = r.Model
		case "project":
			key = r.Project
		case "day":
			key = r.At.UTC().Format(time.DateOnly)
		case "tier":
			key = r.Tier
		}
		g := byKey[key]
		if g == nil {
			g = &ledger.Group{Key: key}
			byKey[key] = g
			keys = append(keys, key)
		}
		g.Add(r.Totals)
		rep.Total.Add(r.Totals)
	}
	for _, k := range keys {
		rep.Groups = append(rep.Groups, *byKey[k])
	}
	slices.SortFunc(rep.Groups, func(a, b ledger.Group) int {
		if q.By == "day" {
			return strings.Compare(a.Key, b.Key)
		}
		return cmp.Or(cmp.Compare(b.Tokens(), a.Tokens()), strings.Compare(a.Key, b.Key))
	})
	return rep, nil
}

// Daily adds up the rows from since's UTC day on by UTC day and account.
func (f *FixedUsage) Daily(_ context.Context, since time.Time) ([]ledger.DayByAccount, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	from := UTCDay(since)
	var out []ledger.DayByAccount
	for _, r := range f.Rows {
		if r.At.Before(from) {
			continue
		}
		day := r.At.UTC().Format(time.DateOnly)
		i := slices.IndexFunc(out, func(d ledger.DayByAccount) bool { return d.Day == day && d.Account == r.Account })
		if i < 0 {
			out = append(out, ledger.DayByAccount{Day: day, Account: r.Account})
			i = len(out) - 1
		}
		out[i].Add(r.Totals)
	}
	slices.SortFunc(out, func(a, b ledger.DayByAccount) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), strings.Compare(a.Account, b.Account))
	})
	return out, nil
}

// Burn returns the prepared burn rate of account (zero figures when none).
func (f *FixedUsage) Burn(_ context.Context, account string) (ledger.Burn, error) {
	if err := f.fail(); err != nil {
		return ledger.Burn{}, err
	}
	if b, ok := f.Burns[account]; ok {
		b.Account = account
		return b, nil
	}
	return ledger.Burn{Account: account}, nil
}

// Forecast returns the prepared forecast at now.
func (f *FixedUsage) Forecast(_ context.Context, _ []string, now time.Time) (ledger.Forecast, error) {
	if err := f.fail(); err != nil {
		return ledger.Forecast{}, err
	}
	p := f.Pool
	p.Now = now
	return p, nil
}

// UTCDay is the UTC midnight that starts t's UTC day (the ledger's days are UTC days).
func UTCDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// LocalMidnight is the local midnight that starts now's day.
func LocalMidnight(now time.Time) time.Time {
	now = now.Local()
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.Local)
}

// UsageEvery is how often the Usage window and the tray's usage line read the ledger again.
const UsageEvery = 60 * time.Second

// UsageReadTimeout bounds one read of the ledger.
const UsageReadTimeout = 10 * time.Second

// Pace is the pool's forecast (ledger.Forecast over its ChatGPT accounts) as the tray's tooltip
// and the dashboard keep it. Like the tray's usage line it is read again only when it may have
// changed: at once when the accounts change, and at most every UsageEvery after the relay served
// requests (served, its request total, moved). An idle relay's is never read again: its pace
// is the hour before it was read, and ledger.Forecast.Lasts says nothing of it an hour on.
type Pace struct {
	mu       sync.Mutex
	f        ledger.Forecast
	at       time.Time // when it was read (elapsed clock); zero: read at the next look
	served   int64     // the relay's request total then
	accounts string    // the accounts it was read for
}

// Read is the kept forecast at the elapsed-clock time t with served requests served so far;
// when a read is due it reads src for the ChatGPT accounts of accts at now. It may block on
// the ledger; a ledger that cannot be read gives no forecast.
func (p *Pace) Read(served int64, t time.Time, src UsageSource, accts []proxy.AccountStats, now time.Time) ledger.Forecast {
	var names []string
	for _, a := range accts {
		if a.Kind == proxy.KindChatGPT {
			names = append(names, a.Name)
		}
	}
	key := strings.Join(names, "\n")
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && p.accounts == key && (p.served == served || t.Sub(p.at) < UsageEvery) {
		return p.f
	}
	p.at, p.served, p.accounts, p.f = t, served, key, ledger.Forecast{}
	if len(names) == 0 || src == nil {
		return p.f
	}
	ctx, cancel := context.WithTimeout(context.Background(), UsageReadTimeout)
	defer cancel()
	if f, err := src.Forecast(ctx, names, now); err == nil {
		p.f = f
	}
	return p.f
}

// Forget drops the kept forecast: the next Read reads one (a new source).
func (p *Pace) Forget() {
	p.mu.Lock()
	p.at = time.Time{}
	p.mu.Unlock()
}

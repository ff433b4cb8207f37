package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Query selects the rows a Summary adds up.
type Query struct {
	// Since and Until bound the request times, [Since, Until). A zero Since means the start
	// of the retention (now - Retention); a zero Until means no upper bound.
	Since time.Time `json:"since"`
	Until time.Time `json:"until,omitzero"`
	// By is the grouping: "account" (the default when ""), "model" (the served model),
	// "project", "day" (UTC date, "YYYY-MM-DD"), "session" or "tier" (the service tier asked
	// for, "" when none).
	By string `json:"by"`
}

// Totals are sums over a set of requests.
type Totals struct {
	Requests        int64 `json:"requests"`
	Errors          int64 `json:"errors"`
	InputTokens     int64 `json:"input_tokens"`
	CachedTokens    int64 `json:"cached_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	ReasoningTokens int64 `json:"reasoning_tokens"`
	// CostUSD is the API-equivalent cost at list prices (see Price): what the same tokens
	// would cost on an API key, at the service tier each request was sent with (priority at
	// its multiple, TierMultipliers). For requests served by API-key accounts it is the real
	// cost; the caller, which knows the accounts' kinds, labels it (a ChatGPT seat's priority
	// requests cost no dollars: their figure is an estimate). Unpriced models add 0.
	CostUSD float64 `json:"cost_usd"`
	// UnpricedTokens are the tokens (input plus output) of models no price table knows: CostUSD
	// leaves them out, so a total with any is a lower bound, and one made only of them has no
	// cost to show (never $0).
	UnpricedTokens int64 `json:"unpriced_tokens,omitempty"`
	// CacheHitRatio is CachedTokens / InputTokens (0 without input).
	CacheHitRatio float64 `json:"cache_hit_ratio"`
}

// Tokens is input plus output tokens (cached are part of input, reasoning part of output).
func (t Totals) Tokens() int64 { return t.InputTokens + t.OutputTokens }

// Add adds o's counts and cost to t and recomputes the cache-hit ratio (for callers that sum
// groups or days themselves).
func (t *Totals) Add(o Totals) {
	t.add(o)
	t.finish()
}

func (t *Totals) add(o Totals) {
	t.Requests += o.Requests
	t.Errors += o.Errors
	t.InputTokens += o.InputTokens
	t.CachedTokens += o.CachedTokens
	t.OutputTokens += o.OutputTokens
	t.ReasoningTokens += o.ReasoningTokens
	t.UnpricedTokens += o.UnpricedTokens
	t.CostUSD += o.CostUSD
}

func (t *Totals) finish() {
	t.CacheHitRatio = 0
	if t.InputTokens > 0 {
		t.CacheHitRatio = float64(t.CachedTokens) / float64(t.InputTokens)
	}
}

// Group is one line of a Report: the totals of one account, model, project, day, session or
// service tier.
// Key is "" for requests without one (e.g. no project known).
type Group struct {
	Key string `json:"key"`
	Totals
}

// Report is the answer to a Summary.
type Report struct {
	Query  Query   `json:"query"` // as run: Since filled in, By normalized
	Groups []Group `json:"groups"`
	Total  Group   `json:"total"` // Key ""
	// PricesCheckedAt is the date of the built-in price table, to show beside every cost.
	PricesCheckedAt string `json:"prices_checked_at"`
	// TierMultipliers are the service tiers priced above the standard price, as multiples of
	// it ({"priority": 2}), of the same date.
	TierMultipliers map[string]float64 `json:"tier_multipliers"`
	// UnpricedModels are the models with tokens in the report that no price table knows,
	// sorted; their cost counts as 0.
	UnpricedModels []string `json:"unpriced_models"`
	// FromRollups says that part of the range lies before the retention and was read from the
	// daily roll-ups, and so counted in whole UTC days.
	FromRollups bool `json:"from_rollups,omitempty"`
}

// Groupings are the values Query.By takes, in the order to list them (groupings has each).
var Groupings = []string{"account", "model", "project", "day", "session", "tier"}

// groupings maps Query.By to the column or expression it groups by, in requests and in daily
// ("" where the roll-ups cannot answer). Only these fixed strings ever reach the SQL text.
var groupings = map[string][2]string{
	"account": {"account", "account"},
	"model":   {"served_model", "model"},
	"project": {"project", "project"},
	"day":     {"strftime('%Y-%m-%d', at / 1000, 'unixepoch')", "day"},
	"session": {"session", ""},
	"tier":    {"service_tier", "service_tier"},
}

// Summary adds up requests by q.By over [q.Since, q.Until).
//
// Inside the retention it reads request rows (exact to the millisecond). When q.Since is older
// than the retention start and the grouping is not "session", the days before the first
// whole UTC day inside the retention are read from the daily roll-ups instead (whole days,
// so the first day counts entirely), and the rest from the rows: the two never overlap.
// Grouping by session only ever covers retained rows.
//
// Groups are sorted by day for "day", else by tokens (most first), then key. Cost: one
// indexed range scan over the rows in range, plus one over the roll-ups when used; memory
// grows with the number of (group, model) pairs, not with rows.
func (l *Ledger) Summary(ctx context.Context, q Query) (Report, error) {
	if l == nil || l.shut.Load() {
		return Report{}, ErrClosed
	}
	if q.By == "" {
		q.By = "account"
	}
	q.By = strings.ToLower(q.By)
	cols, ok := groupings[q.By]
	if !ok {
		return Report{}, fmt.Errorf("ledger: unknown grouping %q (want one of %s)", q.By, strings.Join(Groupings, ", "))
	}
	cutoff := l.now().Add(-l.retention)
	if q.Since.IsZero() {
		q.Since = cutoff
	}
	rep := Report{Query: q, PricesCheckedAt: PricesCheckedAt, TierMultipliers: TierMultipliers()}
	acc := newAccumulator(l.prices)

	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // one snapshot for both parts
	if err != nil {
		return Report{}, err
	}
	defer tx.Rollback()

	rowsFrom := q.Since
	if q.Since.Before(cutoff) && cols[1] != "" {
		firstWholeDay := ceilDay(cutoff)
		end := firstWholeDay
		if !q.Until.IsZero() {
			end = minTime(end, ceilDay(q.Until))
		}
		if from := floorDay(q.Since); from.Before(end) {
			rep.FromRollups = true
			err := acc.query(ctx, tx, `SELECT `+cols[1]+`, model, `+pricedTier+`, SUM(requests), SUM(errors),
				SUM(input_tokens), SUM(cached_tokens), SUM(output_tokens), SUM(reasoning_tokens)
				FROM daily_tiers WHERE day >= ? AND day < ? GROUP BY 1, 2, 3`, dayOf(from), dayOf(end))
			if err != nil {
				return Report{}, err
			}
		}
		rowsFrom = firstWholeDay
	}
	until := int64(math.MaxInt64)
	if !q.Until.IsZero() {
		until = q.Until.UnixMilli()
	}
	if from := rowsFrom.UnixMilli(); from < until {
		err := acc.query(ctx, tx, `SELECT `+cols[0]+`, served_model, `+pricedTier+`, COUNT(*), SUM(is_error),
			SUM(input_tokens), SUM(cached_tokens), SUM(output_tokens), SUM(reasoning_tokens)
			FROM requests WHERE at >= ? AND at < ? GROUP BY 1, 2, 3`, from, until)
		if err != nil {
			return Report{}, err
		}
	}

	rep.Groups = acc.groups()
	if q.By == "day" {
		slices.SortFunc(rep.Groups, func(a, b Group) int { return strings.Compare(a.Key, b.Key) })
	} else {
		slices.SortFunc(rep.Groups, func(a, b Group) int {
			return cmp.Or(cmp.Compare(b.Tokens(), a.Tokens()), strings.Compare(a.Key, b.Key))
		})
	}
	for _, g := range rep.Groups {
		rep.Total.add(g.Totals)
	}
	rep.Total.finish()
	rep.UnpricedModels = acc.unpricedModels()
	return rep, nil
}

// accumulator merges (key, model, tier, sums) lines into groups, pricing each line by its model
// and the tier it was sent with.
type accumulator struct {
	prices   map[string]Price
	byKey    map[string]*Group
	unpriced map[string]bool
}

func newAccumulator(prices map[string]Price) *accumulator {
	return &accumulator{prices: prices, byKey: map[string]*Group{}, unpriced: map[string]bool{}}
}

// query runs a statement whose columns are key, model, priced tier, requests, errors, input,
// cached, output, reasoning, and adds every line.
func (a *accumulator) query(ctx context.Context, tx *sql.Tx, stmt string, args ...any) error {
	rows, err := tx.QueryContext(ctx, stmt, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key, model, tier string
		var t Totals
		if err := rows.Scan(&key, &model, &tier, &t.Requests, &t.Errors, &t.InputTokens, &t.CachedTokens,
			&t.OutputTokens, &t.ReasoningTokens); err != nil {
			return err
		}
		a.add(key, model, tier, t)
	}
	return rows.Err()
}

func (a *accumulator) add(key, model, tier string, t Totals) {
	if p, ok := LookupPrice(model, a.prices); ok {
		t.CostUSD = p.Cost(t.InputTokens, t.CachedTokens, t.OutputTokens) * TierMultiplier(tier)
	} else if t.InputTokens+t.OutputTokens > 0 {
		a.unpriced[model] = true
		t.UnpricedTokens = t.InputTokens + t.OutputTokens
	}
	g := a.byKey[key]
	if g == nil {
		g = &Group{Key: key}
		a.byKey[key] = g
	}
	g.add(t)
}

func (a *accumulator) groups() []Group {
	out := make([]Group, 0, len(a.byKey))
	for _, g := range a.byKey {
		g.finish()
		out = append(out, *g)
	}
	return out
}

func (a *accumulator) unpricedModels() []string {
	var out []string
	for m := range a.unpriced {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// DayByAccount is one bar segment of the daily chart: one account's totals on one UTC day.
type DayByAccount struct {
	Day     string // UTC date, "YYYY-MM-DD"
	Account string
	Totals
}

// Daily returns tokens and cost per UTC day and account from since's day on, sorted by day then
// account. It reads only the roll-ups, so it reaches past the rows' retention. Cost: one range
// scan of the roll-up table's primary key.
func (l *Ledger) Daily(ctx context.Context, since time.Time) ([]DayByAccount, error) {
	if l == nil || l.shut.Load() {
		return nil, ErrClosed
	}
	rows, err := l.db.QueryContext(ctx, `SELECT day, account, model, `+pricedTier+`, SUM(requests), SUM(errors),
		SUM(input_tokens), SUM(cached_tokens), SUM(output_tokens), SUM(reasoning_tokens)
		FROM daily_tiers WHERE day >= ? GROUP BY 1, 2, 3, 4 ORDER BY 1, 2`, dayOf(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DayByAccount
	for rows.Next() {
		var day, account, model, tier string
		var t Totals
		if err := rows.Scan(&day, &account, &model, &tier, &t.Requests, &t.Errors, &t.InputTokens,
			&t.CachedTokens, &t.OutputTokens, &t.ReasoningTokens); err != nil {
			return nil, err
		}
		if p, ok := LookupPrice(model, l.prices); ok {
			t.CostUSD = p.Cost(t.InputTokens, t.CachedTokens, t.OutputTokens) * TierMultiplier(tier)
		} else {
			t.UnpricedTokens = t.InputTokens + t.OutputTokens
		}
		if n := len(out); n == 0 || out[n-1].Day != day || out[n-1].Account != account {
			out = append(out, DayByAccount{Day: day, Account: account})
		}
		out[len(out)-1].add(t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].finish()
	}
	return out, nil
}

// Burn is how fast an account's ChatGPT windows fill, in tokens (input + output) per 1%.
type Burn struct {
	Account string
	// PrimaryTokensPerPercent is for the five-hour window, SecondaryTokensPerPercent for the
	// weekly one; 0 when unknown (no two readings of one window with the percent rising).
	PrimaryTokensPerPercent, SecondaryTokensPerPercent float64
	// PrimaryPercentSeen and SecondaryPercentSeen are the percentage points the figures rest
	// on: the more, the surer.
	PrimaryPercentSeen, SecondaryPercentSeen float64
	// Latest is the newest reading (zero Time when none).
	Latest QuotaReading
}

// BurnLookback is how far back Burn reads quota readings: a week and a day, so the weekly
// window is seen whole.
const BurnLookback = 8 * 24 * time.Hour

// sameWindowSlack is how far two readings' resets-at may differ and still be the same window:
// a resets-at derived from "resets in N seconds" moves a little between readings, while the
// next window resets at least a full window later.
const sameWindowSlack = 10 * time.Minute

// Burn measures an account's tokens per 1% of its windows from the readings of the last
// BurnLookback and the account's rows between them.
//
// Within one window (successive readings with the same resets-at, percent never falling), the
// tokens between its first reading and its last rise are divided by the percent gained;
// tokens after the last rise are not counted yet (they have not shown in the percent), and
// tokens between two windows never are. Each figure is a ratio of sums over all such windows.
// Cost: one indexed scan of the account's rows over the lookback.
func (l *Ledger) Burn(ctx context.Context, account string) (Burn, error) {
	if l == nil || l.shut.Load() {
		return Burn{}, ErrClosed
	}
	return l.burn(ctx, account, l.now())
}

// burn is Burn with the lookback ending at now.
func (l *Ledger) burn(ctx context.Context, account string, now time.Time) (Burn, error) {
	b := Burn{Account: account}
	tx, err := l.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return b, err
	}
	defer tx.Rollback()
	var latest reading
	err = tx.QueryRowContext(ctx, `SELECT at, primary_used, primary_resets_at, secondary_used, secondary_resets_at
		FROM quota WHERE account = ? ORDER BY at DESC LIMIT 1`, account).Scan(
		&latest.at, &latest.pUsed, &latest.pReset, &latest.sUsed, &latest.sReset)
	if err == sql.ErrNoRows {
		return b, nil
	}
	if err != nil {
		return b, err
	}
	b.Latest = latest.reading(account)

	readings, err := readingsSince(ctx, tx, account, now.Add(-BurnLookback))
	if err != nil || len(readings) < 2 {
		return b, err
	}
	// tokens[i] is the account's tokens in (readings[i].at, readings[i+1].at].
	tokens := make([]float64, len(readings)-1)
	rows, err := tx.QueryContext(ctx, `SELECT at, input_tokens + output_tokens FROM requests
		WHERE account = ? AND at > ? AND at <= ? ORDER BY at`, account, readings[0].at, readings[len(readings)-1].at)
	if err != nil {
		return b, err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		var at, n int64
		if err := rows.Scan(&at, &n); err != nil {
			return b, err
		}
		for at > readings[i+1].at {
			i++
		}
		tokens[i] += float64(n)
	}
	if err := rows.Err(); err != nil {
		return b, err
	}
	pTok, pPct := burnRate(readings, tokens, func(r reading) (float64, int64) { return r.pUsed, r.pReset })
	sTok, sPct := burnRate(readings, tokens, func(r reading) (float64, int64) { return r.sUsed, r.sReset })
	b.PrimaryPercentSeen, b.SecondaryPercentSeen = pPct, sPct
	if pPct > 0 {
		b.PrimaryTokensPerPercent = pTok / pPct
	}
	if sPct > 0 {
		b.SecondaryTokensPerPercent = sTok / sPct
	}
	return b, nil
}

// reading is a quota row as stored (at in unix ms, resets-at in unix s).
type reading struct {
	at             int64
	pUsed, sUsed   float64
	pReset, sReset int64
}

func (r reading) reading(account string) QuotaReading {
	q := QuotaReading{Account: account, Time: time.UnixMilli(r.at).UTC(),
		PrimaryUsedPercent: r.pUsed, SecondaryUsedPercent: r.sUsed}
	if r.pReset != 0 {
		q.PrimaryResetsAt = time.Unix(r.pReset, 0).UTC()
	}
	if r.sReset != 0 {
		q.SecondaryResetsAt = time.Unix(r.sReset, 0).UTC()
	}
	return q
}

func readingsSince(ctx context.Context, tx *sql.Tx, account string, since time.Time) ([]reading, error) {
	rows, err := tx.QueryContext(ctx, `SELECT at, primary_used, primary_resets_at, secondary_used, secondary_resets_at
		FROM quota WHERE account = ? AND at >= ? ORDER BY at`, account, since.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []reading
	for rows.Next() {
		var r reading
		if err := rows.Scan(&r.at, &r.pUsed, &r.pReset, &r.sUsed, &r.sReset); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// burnRate sums, over every run of readings inside one window with the percent not falling,
// the tokens up to the run's last rise and the percent gained. tokens[i] lies between
// readings i and i+1.
func burnRate(rs []reading, tokens []float64, window func(reading) (used float64, resetsAt int64)) (tok, pct float64) {
	pending := 0.0 // tokens since the run's last rise
	for i := 0; i+1 < len(rs); i++ {
		u0, r0 := window(rs[i])
		u1, r1 := window(rs[i+1])
		same := r0 != 0 && r1 != 0 && math.Abs(float64(r1-r0)) <= sameWindowSlack.Seconds()
		if !same || u1 < u0 {
			pending = 0 // the run ends; what was not yet seen in the percent is not counted
			continue
		}
		pending += tokens[i]
		if u1 > u0 {
			tok += pending
			pct += u1 - u0
			pending = 0
		}
	}
	return tok, pct
}

// Forecast is when the pool's five-hour capacity runs out at the current pace.
type Forecast struct {
	Now time.Time
	// TokensLastHour is the pace: the accounts' tokens (input + output) in the hour before Now.
	TokensLastHour int64
	// CapacityTokens is what the known accounts' five-hour windows still hold: the sum of
	// (100 - used%) * tokens-per-1%, a window whose resets-at has passed counting as empty.
	CapacityTokens float64
	// RunsOut is Now + CapacityTokens / pace; zero when unknown (no pace, or no account with a
	// known burn rate). Windows that reset meanwhile are not counted, so it errs early.
	RunsOut time.Time
	// NextReset is the soonest five-hour reset after Now of the Known accounts' last readings,
	// when capacity comes back; zero when none is known.
	NextReset time.Time
	// Known are the accounts counted in CapacityTokens; Unknown those without a reading or a
	// burn rate (their tokens still count in the pace).
	Known, Unknown []string
}

// Lasts is what the forecast says at now of the pool's five-hour capacity: until when it lasts
// at the pace, and whether that is past NextReset (capacity comes back before it runs out).
// ok is false when it does not say: no pace or no burn rate, used up already, or read over an
// hour before now (its pace is the hour before Now: a forecast kept since, with no request
// to read it again, has none left).
func (f Forecast) Lasts(now time.Time) (until time.Time, pastReset, ok bool) {
	if f.TokensLastHour <= 0 || f.RunsOut.IsZero() || !f.RunsOut.After(now) || now.Sub(f.Now) >= time.Hour {
		return time.Time{}, false, false
	}
	return f.RunsOut, !f.NextReset.IsZero() && !f.RunsOut.Before(f.NextReset), true
}

// Forecast estimates when the five-hour capacity of accounts (all accounts with quota readings
// when empty) runs out at the pace of the last hour before now. Cost: one Burn per account and
// one indexed count over the last hour.
func (l *Ledger) Forecast(ctx context.Context, accounts []string, now time.Time) (Forecast, error) {
	if l == nil || l.shut.Load() {
		return Forecast{}, ErrClosed
	}
	f := Forecast{Now: now}
	if len(accounts) == 0 {
		rows, err := l.db.QueryContext(ctx, `SELECT DISTINCT account FROM quota ORDER BY account`)
		if err != nil {
			return f, err
		}
		for rows.Next() {
			var a string
			if err := rows.Scan(&a); err != nil {
				rows.Close()
				return f, err
			}
			accounts = append(accounts, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return f, err
		}
	}
	if len(accounts) == 0 {
		return f, nil
	}
	for _, a := range accounts {
		b, err := l.burn(ctx, a, now)
		if err != nil {
			return f, err
		}
		if b.Latest.Time.IsZero() || b.PrimaryTokensPerPercent <= 0 {
			f.Unknown = append(f.Unknown, a)
			continue
		}
		used := b.Latest.PrimaryUsedPercent
		if !b.Latest.PrimaryResetsAt.IsZero() && !b.Latest.PrimaryResetsAt.After(now) {
			used = 0 // the window has reset since the reading
		}
		f.CapacityTokens += max(100-used, 0) * b.PrimaryTokensPerPercent
		if r := b.Latest.PrimaryResetsAt; r.After(now) && (f.NextReset.IsZero() || r.Before(f.NextReset)) {
			f.NextReset = r
		}
		f.Known = append(f.Known, a)
	}
	args := []any{now.Add(-time.Hour).UnixMilli(), now.UnixMilli()}
	for _, a := range accounts {
		args = append(args, a)
	}
	var pace sql.NullInt64
	err := l.db.QueryRowContext(ctx, `SELECT SUM(input_tokens + output_tokens) FROM requests
		WHERE at > ? AND at <= ? AND account IN (?`+strings.Repeat(", ?", len(accounts)-1)+`)`, args...).Scan(&pace)
	if err != nil {
		return f, err
	}
	f.TokensLastHour = pace.Int64
	if f.TokensLastHour > 0 && len(f.Known) > 0 {
		hours := min(f.CapacityTokens/float64(f.TokensLastHour), maxForecastHours)
		f.RunsOut = now.Add(time.Duration(hours * float64(time.Hour)))
	}
	return f, nil
}

// maxForecastHours caps RunsOut at ten years ahead, far below time.Duration's range.
const maxForecastHours = 10 * 365 * 24

func floorDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// ceilDay is the first UTC midnight at or after t.
func ceilDay(t time.Time) time.Time {
	d := floorDay(t)
	if d.Before(t) {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

package window

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/look"
	"github.com/codexrelay/codexrelay/ui/source"
)

// The Usage window's view model: what one read of the ledger found, and what the window shows
// for it (pure functions; usagewin.go has the widgets).

// usageData is what one read of the ledger found (read off the UI thread).
type usageData struct {
	days  int
	now   time.Time
	kinds accountKinds
	// err is why the ledger could not be read (ErrUsageOff, ErrUsageClosed or a failure).
	err                               error
	accounts, models, projects, tiers ledger.Report
	daily                             []ledger.DayByAccount
	// burns are the ChatGPT accounts' burn rates, in list order; burnErr is why they or the
	// forecast could not be read.
	burns    []ledger.Burn
	forecast ledger.Forecast
	burnErr  error
}

// accountKinds are the accounts' kinds by name, as the relay's snapshot says (the accounts of
// the settings, in list order), their places in the list, and the ChatGPT accounts in that
// order: a seat's cost is API-equivalent, an API key's is real (look.Kinds).
type accountKinds struct {
	kind    look.Kinds
	order   map[string]int // the accounts' places in the list
	chatgpt []string
}

func kindsOf(accts []proxy.AccountStats) accountKinds {
	k := accountKinds{kind: look.KindsOf(accts), order: map[string]int{}}
	for i, a := range accts {
		k.order[a.Name] = i
		if a.Kind == proxy.KindChatGPT {
			k.chatgpt = append(k.chatgpt, a.Name)
		}
	}
	return k
}

// periodStart is the first UTC day the last days days cover (today, in UTC, is the last).
func periodStart(now time.Time, days int) time.Time {
	return source.UTCDay(now).AddDate(0, 0, -(days - 1))
}

// readUsage reads everything the window shows for the last days days; it may block.
func readUsage(src source.UsageSource, accts []proxy.AccountStats, days int, now time.Time) usageData {
	d := usageData{days: days, now: now, kinds: kindsOf(accts)}
	ctx, cancel := context.WithTimeout(context.Background(), source.UsageReadTimeout)
	defer cancel()
	since := periodStart(now, days)
	if d.accounts, d.err = src.Summary(ctx, ledger.Query{Since: since, By: "account"}); d.err != nil {
		return d
	}
	if d.models, d.err = src.Summary(ctx, ledger.Query{Since: since, By: "model"}); d.err != nil {
		return d
	}
	if d.projects, d.err = src.Summary(ctx, ledger.Query{Since: since, By: "project"}); d.err != nil {
		return d
	}
	if d.tiers, d.err = src.Summary(ctx, ledger.Query{Since: since, By: "tier"}); d.err != nil {
		return d
	}
	if d.daily, d.err = src.Daily(ctx, since); d.err != nil {
		return d
	}
	for _, a := range d.kinds.chatgpt {
		b, err := src.Burn(ctx, a)
		if err != nil {
			d.burnErr = err
			return d
		}
		d.burns = append(d.burns, b)
	}
	if len(d.kinds.chatgpt) > 0 {
		d.forecast, d.burnErr = src.Forecast(ctx, d.kinds.chatgpt, now)
	}
	return d
}

// usageState is what the window shows: the figures, or a message in their place.
type usageState int

const (
	usageLoading usageState = iota
	usageReady
	usageEmpty  // the ledger works and holds nothing for the period
	usageOff    // switched off: how to turn it on
	usageFailed // cannot be read: why
)

// tileView is one of the figures at the top: a value and what it is.
type tileView struct{ value, caption string }

// usageRowView is one line of the top models or projects.
type usageRowView struct{ name, tokens, cost, cacheHit string }

// burnRowView is one ChatGPT account's burn rates.
type burnRowView struct {
	account    string
	five, week textView
}

// usageView is everything the window shows for one read.
type usageView struct {
	state   usageState
	message string

	tokens, cost, cache, requests tileView
	pricesNote                    string

	// legend names the accounts of both charts (the same colours in each).
	legend      []legendItem
	tokensChart chartData
	costTitle   string
	costChart   chartData

	modelsNote, projectsNote string
	models, projects         []usageRowView
	// tiers are the service tiers asked for, by tokens; tiersNote says how they are priced.
	tiers     []usageRowView
	tiersNote string

	burns    []burnRowView
	forecast string
}

// pricesAt is the wording that dates a cost: "API list prices of 2026-11-30".
func pricesAt(date string) string {
	if date == "" {
		date = ledger.PricesCheckedAt
	}
	return "API list prices of " + date
}

// newUsageView is what the window shows for d (pure: the tests call it too): a message in
// place of the figures, or the figures at the top, the charts, the top tables and the quota
// burn.
func newUsageView(d usageData) usageView {
	if v, ok := usageMessage(d); ok {
		return v
	}
	v := usageView{state: usageReady}
	v.setFigures(d)
	v.setCharts(d)
	// The top models and projects.
	v.models, v.modelsNote = topRows(d.models, "(unknown model)"), "by tokens"
	v.projects, v.projectsNote = topRows(d.projects, "(no project)"), "by tokens"
	v.tiers, v.tiersNote = tierRows(d.tiers), tiersNote(d.tiers, d.kinds)
	v.setBurn(d)
	return v
}

// usageMessage is what the window shows in place of the figures, if anything: the ledger is
// off, closed or failed, or holds nothing for the period.
func usageMessage(d usageData) (usageView, bool) {
	switch {
	case errors.Is(d.err, source.ErrUsageOff):
		return usageView{state: usageOff, message: "The usage ledger is off, so Codex Relay records no usage. " +
			"Turn it on here, or from a terminal with:"}, true
	case errors.Is(d.err, source.ErrUsageClosed) && d.err.Error() == source.ErrUsageClosed.Error():
		// Not open because nothing serves; one that failed to open says why, below.
		return usageView{state: usageFailed, message: "The usage ledger opens while the relay serves: " +
			"start the proxy (Start proxy in the tray menu) to record and see usage."}, true
	case d.err != nil:
		return usageView{state: usageFailed, message: sentence(d.err.Error())}, true
	}
	total := d.accounts.Total
	if total.Requests == 0 && total.Tokens() == 0 && len(d.daily) == 0 {
		return usageView{state: usageEmpty, message: fmt.Sprintf("No requests recorded in the last %d days yet. "+
			"Each request through the relay adds its tokens, cost and cache hits here.", d.days)}, true
	}
	return usageView{}, false
}

// setFigures sets the figures at the top and the note on their prices.
func (v *usageView) setFigures(d usageData) {
	total := d.accounts.Total
	prices := pricesAt(d.accounts.PricesCheckedAt)
	split := d.kinds.kind.Split(d.accounts.Groups)
	v.tokens = tileView{look.TokenCount(total.Tokens()), "tokens · " + look.TokenCount(total.OutputTokens) + " output"}
	v.cost = tileView{look.Dollars(total.CostUSD), "cost"}
	switch {
	case split.Equivalent > 0 && split.Real > 0:
		v.cost.caption = "cost · " + look.Dollars(split.Equivalent) + " API-equivalent"
	case split.Equivalent > 0:
		v.cost.caption = "API-equivalent cost"
	}
	v.cache = tileView{"–", "cache hits"}
	if total.InputTokens > 0 {
		v.cache = tileView{fmt.Sprintf("%.0f%%", 100*total.CacheHitRatio), "cache hits · " + look.TokenCount(total.CachedTokens) + " cached"}
	}
	v.requests = tileView{look.Count(total.Requests), "requests"}
	if total.Errors > 0 {
		v.requests.caption += " · " + look.Plural(total.Errors, "error")
	}
	v.pricesNote = "Costs at " + prices + ". A ChatGPT seat's cost is API-equivalent: what its tokens would cost on an API key."
	if len(d.accounts.UnpricedModels) > 0 {
		v.pricesNote += " No price known for " + strings.Join(d.accounts.UnpricedModels, ", ") + ": its tokens are unpriced, left out of the costs."
	}
	if d.accounts.FromRollups {
		v.pricesNote += " Days before the retention come from the daily totals."
	}
}

// setCharts sets the tokens and the cost per day, stacked by account in the same colours, and
// the legend that names the accounts.
func (v *usageView) setCharts(d usageData) {
	colors := accountColors(d)
	tokenBars, costBars, used := dayBars(d, colors)
	v.tokensChart = newChartData(tokenBars, func(x float64) string { return look.TokenCount(int64(x)) })
	v.costChart = newChartData(costBars, axisDollars)
	if v.costChart.top < minCostTop {
		// A few tokens' worth: an axis to $0.02, so that its two lines read $0.01 and $0.02
		// (both read "<$0.01" on an axis to the tallest bar's fraction of a cent).
		v.costChart = newChartDataTo(costBars, minCostTop, axisDollars)
	}
	var names []string
	for a := range used {
		names = append(names, a)
	}
	slices.SortFunc(names, d.kinds.compare)
	for _, a := range names {
		text := a
		if d.kinds.kind.APIKey(a) {
			text += " (API key)"
		}
		v.legend = append(v.legend, legendItem{text, colors[a]})
	}
	// The prices' date is said once, in the note at the top (it was said four times).
	v.costTitle = "API-equivalent for ChatGPT seats"
}

// dayBars are the period's days as the two charts' bars, each stacked by account in list
// order, and the accounts that show in them.
func dayBars(d usageData, colors map[string]fyne.ThemeColorName) (tokenBars, costBars []chartBar, used map[string]bool) {
	days := make([]string, d.days)
	byDay := map[string]int{}
	for i := range days {
		days[i] = periodStart(d.now, d.days).AddDate(0, 0, i).Format(time.DateOnly)
		byDay[days[i]] = i
	}
	tokenBars = make([]chartBar, d.days)
	costBars = make([]chartBar, d.days)
	for i, day := range days {
		tokenBars[i] = chartBar{key: day, label: dayLabel(day)}
		costBars[i] = chartBar{key: day, label: dayLabel(day)}
	}
	used = map[string]bool{}
	for _, r := range d.daily {
		i, ok := byDay[r.Day]
		if !ok {
			continue
		}
		if r.Tokens() > 0 {
			tokenBars[i].parts = append(tokenBars[i].parts, chartPart{series: r.Account, value: float64(r.Tokens()), color: colors[r.Account]})
			used[r.Account] = true
		}
		if r.CostUSD > 0 {
			costBars[i].parts = append(costBars[i].parts, chartPart{series: r.Account, value: r.CostUSD, color: colors[r.Account]})
			used[r.Account] = true
		}
	}
	for i := range tokenBars {
		order := func(a, b chartPart) int { return d.kinds.compare(a.series, b.series) }
		slices.SortStableFunc(tokenBars[i].parts, order)
		slices.SortStableFunc(costBars[i].parts, order)
	}
	return tokenBars, costBars, used
}

// setBurn sets the ChatGPT accounts' quota burn and the pool's forecast.
func (v *usageView) setBurn(d usageData) {
	unknown := false
	for _, b := range d.burns {
		r := burnRowView{account: b.Account, five: perPercent(b.PrimaryTokensPerPercent), week: perPercent(b.SecondaryTokensPerPercent)}
		unknown = unknown || r.five.text == burnUnknown || r.week.text == burnUnknown
		v.burns = append(v.burns, r)
	}
	v.forecast = forecastText(d, unknown)
}

// accountColors gives each account a chart colour by its place in the list (so that it keeps
// its colour from one period to the next), then the accounts no longer listed by name.
func accountColors(d usageData) map[string]fyne.ThemeColorName {
	var gone []string
	for _, r := range d.daily {
		if _, ok := d.kinds.order[r.Account]; !ok && !slices.Contains(gone, r.Account) {
			gone = append(gone, r.Account)
		}
	}
	slices.Sort(gone)
	colors := map[string]fyne.ThemeColorName{}
	for a, i := range d.kinds.order {
		colors[a] = chartColor(i)
	}
	for i, a := range gone {
		colors[a] = chartColor(len(d.kinds.order) + i)
	}
	return colors
}

// compare orders accounts as the list does, the ones no longer listed last, by name.
func (k accountKinds) compare(a, b string) int {
	ia, oka := k.order[a]
	ib, okb := k.order[b]
	switch {
	case oka && okb:
		return cmp.Compare(ia, ib)
	case oka:
		return -1
	case okb:
		return 1
	}
	return strings.Compare(a, b)
}

// dayLabel is a UTC day ("2026-03-12") as the chart labels it: "Mar 12".
func dayLabel(day string) string {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return day
	}
	return t.Format("Jan 2")
}

// axisDollars labels the cost axis: "$5", "$2.50", "$0.25".
func axisDollars(v float64) string {
	switch {
	case v == float64(int64(v)):
		return "$" + look.Count(int64(v))
	case math.Abs(v*100-math.Round(v*100)) > 1e-9:
		return "$" + strconv.FormatFloat(v, 'f', -1, 64) // $0.025: never "<$0.01" on an axis
	}
	return look.Dollars(v)
}

// minCostTop is the least top of the cost axis.
const minCostTop = 0.02

// topRows are the first usageTop groups of a report as table lines.
func topRows(rep ledger.Report, none string) []usageRowView {
	var rows []usageRowView
	for _, g := range rep.Groups {
		if len(rows) == usageTop {
			break
		}
		name := g.Key
		if name == "" {
			name = none
		}
		hit := "–"
		if g.InputTokens > 0 {
			hit = fmt.Sprintf("%.0f%%", 100*g.CacheHitRatio)
		}
		rows = append(rows, usageRowView{name: name, tokens: look.TokenCount(g.Tokens()), cost: look.Dollars(g.CostUSD), cacheHit: hit})
	}
	return rows
}

// tierRows are the service tiers of a report as table lines, named as Codex users know them:
// priority is Fast mode, no tier asked for is the standard one.
func tierRows(rep ledger.Report) []usageRowView {
	rows := topRows(rep, "standard")
	for i, g := range rep.Groups {
		if i == len(rows) {
			break
		}
		if g.Key == "priority" {
			rows[i].name = "priority (Fast)"
		}
	}
	return rows
}

// tiersNote says how the tiers are priced: priority at its multiple, and what that figure is
// for a ChatGPT seat (an estimate: a seat pays for Fast mode in quota, not dollars).
func tiersNote(rep ledger.Report, k accountKinds) string {
	m := rep.TierMultipliers["priority"]
	if m <= 1 {
		return "by tokens"
	}
	note := "priority at " + strconv.FormatFloat(m, 'f', -1, 64) + "×"
	if len(k.chatgpt) > 0 {
		note += " · a seat's API-equivalent"
	}
	return note
}

// perPercent is a burn rate as a cell: "48.2 k", or "–" when unknown (the table's note says
// once what a dash means: "too few readings" in every such cell was said up to six times).
func perPercent(tokens float64) textView {
	if tokens <= 0 {
		return textView{burnUnknown, look.Dim}
	}
	return textView{text: look.TokenCount(int64(tokens))}
}

// burnUnknown is a burn rate not known yet; the forecast under the table says once what it means.
const burnUnknown = "–"

// forecastText says when the pool's five-hour capacity runs out at the last hour's pace, and
// what a dash in the table means when it shows one (dashes).
func forecastText(d usageData, dashes bool) string {
	f := d.forecast
	switch {
	case len(d.kinds.chatgpt) == 0:
		return "Quota burn is measured for ChatGPT accounts, and the list has none."
	case d.burnErr != nil:
		return "The quota burn cannot be read: " + d.burnErr.Error()
	case len(f.Known) == 0:
		return "Not enough readings yet to forecast the pool's 5-hour capacity: each ChatGPT account needs " +
			"a few usage readings in one window while it works."
	}
	var s string
	switch {
	case f.TokensLastHour <= 0:
		s = "No tokens in the last hour: at this pace the pool's 5-hour capacity does not run out."
	case f.RunsOut.IsZero():
		s = "Not enough readings yet to forecast the pool's 5-hour capacity."
	case !f.RunsOut.After(d.now):
		s = "At the pace of the last hour (" + look.TokenCount(f.TokensLastHour) + " tokens), the pool's 5-hour capacity is used up."
	case f.RunsOut.Sub(d.now) > 24*time.Hour:
		s = "At the pace of the last hour (" + look.TokenCount(f.TokensLastHour) + " tokens), the pool's 5-hour capacity lasts more than a day."
	default:
		s = "At the pace of the last hour (" + look.TokenCount(f.TokensLastHour) + " tokens), the pool's 5-hour capacity runs out around " +
			look.Clock(f.RunsOut, d.now) + "."
	}
	switch {
	case dashes && len(f.Unknown) > 0:
		s += " –: too few readings yet; the forecast leaves out " + strings.Join(f.Unknown, ", ") + "."
	case dashes:
		s += " –: too few readings yet."
	case len(f.Unknown) > 0:
		s += " Not counted, for want of readings: " + strings.Join(f.Unknown, ", ") + "."
	}
	return s
}

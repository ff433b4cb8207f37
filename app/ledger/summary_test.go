package ledger

import (
	"context"
	"slices"
	"testing"
	"time"
)

var (
	day1 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	day2 = time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	noon = time.Date(2026, 11, 4, 12, 0, 0, 0, time.UTC) // "now" for these tests
)

// fixture is five requests over two days, two accounts, five served models (one unknown, one
// dated), two projects plus none, and three sessions. Costs at the built-in prices:
//
//	r1 gpt-5:              600k*1.25 + 400k*0.125 + 100k*10 = 1.80
//	r2 gpt-5-codex:        200k*1.25 + 20k*10               = 0.45
//	r3 gpt-5.1-codex-mini: 1M*0.25 + 1M*0.025 + 400k*2      = 1.075
//	r4 mystery-model:      unpriced                          = 0
//	r5 gpt-5-2025-08-07:   50k*1.25 + 50k*0.125              = 0.06875 (an error: 429)
func fixture() []Row {
	return []Row{
		{Time: day1.Add(10 * time.Hour), Account: "alice", Model: "gpt-5", ServedModel: "gpt-5", Route: "/v1/responses",
			Transport: "http", Outcome: "completed", Status: 200, InputTokens: 1_000_000, CachedTokens: 400_000,
			OutputTokens: 100_000, ReasoningTokens: 50_000, LatencyMs: 1200, Session: "s1", Project: "relay"},
		{Time: day1.Add(11 * time.Hour), Account: "alice", Model: "codex", ServedModel: "gpt-5-codex", Route: "/v1/responses",
			Transport: "websocket", Outcome: "completed", Status: 200, InputTokens: 200_000, OutputTokens: 20_000,
			LatencyMs: 800, Session: "s1", Project: "relay"},
		{Time: day2.Add(9 * time.Hour), Account: "bob", Model: "gpt-5.1-codex-mini", Route: "/v1/chat/completions",
			Transport: "http", Outcome: "completed", Status: 200, InputTokens: 2_000_000, CachedTokens: 1_000_000,
			OutputTokens: 400_000, LatencyMs: 300, Session: "s2", Project: "web"},
		{Time: day2.Add(10 * time.Hour), Account: "bob", Model: "mystery-model", Route: "/v1/responses",
			Transport: "http", Outcome: "completed", Status: 200, InputTokens: 1000, OutputTokens: 10,
			LatencyMs: 100, Session: "s2"},
		{Time: day2.Add(11 * time.Hour), Account: "alice", Model: "gpt-5", ServedModel: "gpt-5-2025-08-07",
			Route: "/v1/responses", Transport: "http", Outcome: "failed", Status: 429, InputTokens: 100_000,
			CachedTokens: 50_000, LatencyMs: 50, Session: "s3", Project: "web"},
	}
}

// expected sums of the fixture, by grouping and key (in report order).
var expected = map[string][]Group{
	"account": {
		{"bob", Totals{Requests: 2, InputTokens: 2_001_000, CachedTokens: 1_000_000, OutputTokens: 400_010, CostUSD: 1.075}},
		{"alice", Totals{Requests: 3, Errors: 1, InputTokens: 1_300_000, CachedTokens: 450_000, OutputTokens: 120_000,
			ReasoningTokens: 50_000, CostUSD: 1.8 + 0.45 + 0.06875}},
	},
	"model": {
		{"gpt-5.1-codex-mini", Totals{Requests: 1, InputTokens: 2_000_000, CachedTokens: 1_000_000, OutputTokens: 400_000, CostUSD: 1.075}},
		{"gpt-5", Totals{Requests: 1, InputTokens: 1_000_000, CachedTokens: 400_000, OutputTokens: 100_000, ReasoningTokens: 50_000, CostUSD: 1.8}},
		{"gpt-5-codex", Totals{Requests: 1, InputTokens: 200_000, OutputTokens: 20_000, CostUSD: 0.45}},
		{"gpt-5-2025-08-07", Totals{Requests: 1, Errors: 1, InputTokens: 100_000, CachedTokens: 50_000, CostUSD: 0.06875}},
		{"mystery-model", Totals{Requests: 1, InputTokens: 1000, OutputTokens: 10}},
	},
	"project": {
		{"web", Totals{Requests: 2, Errors: 1, InputTokens: 2_100_000, CachedTokens: 1_050_000, OutputTokens: 400_000, CostUSD: 1.075 + 0.06875}},
		{"relay", Totals{Requests: 2, InputTokens: 1_200_000, CachedTokens: 400_000, OutputTokens: 120_000, ReasoningTokens: 50_000, CostUSD: 2.25}},
		{"", Totals{Requests: 1, InputTokens: 1000, OutputTokens: 10}},
	},
	"day": {
		{"2026-11-02", Totals{Requests: 2, InputTokens: 1_200_000, CachedTokens: 400_000, OutputTokens: 120_000, ReasoningTokens: 50_000, CostUSD: 2.25}},
		{"2026-11-03", Totals{Requests: 3, Errors: 1, InputTokens: 2_101_000, CachedTokens: 1_050_000, OutputTokens: 400_010, CostUSD: 1.075 + 0.06875}},
	},
	"session": {
		{"s2", Totals{Requests: 2, InputTokens: 2_001_000, CachedTokens: 1_000_000, OutputTokens: 400_010, CostUSD: 1.075}},
		{"s1", Totals{Requests: 2, InputTokens: 1_200_000, CachedTokens: 400_000, OutputTokens: 120_000, ReasoningTokens: 50_000, CostUSD: 2.25}},
		{"s3", Totals{Requests: 1, Errors: 1, InputTokens: 100_000, CachedTokens: 50_000, CostUSD: 0.06875}},
	},
}

var fixtureTotal = Totals{Requests: 5, Errors: 1, InputTokens: 3_301_000, CachedTokens: 1_450_000,
	OutputTokens: 520_010, ReasoningTokens: 50_000, CostUSD: 1.8 + 0.45 + 1.075 + 0.06875}

func checkReport(t *testing.T, by string, r Report) {
	t.Helper()
	want := expected[by]
	if len(r.Groups) != len(want) {
		t.Fatalf("by %s: %d groups %+v, want %d", by, len(r.Groups), r.Groups, len(want))
	}
	for i, g := range r.Groups {
		if g.Key != want[i].Key {
			t.Errorf("by %s: group %d is %q, want %q", by, i, g.Key, want[i].Key)
			continue
		}
		sameTotals(t, "by "+by+" "+g.Key, g.Totals, want[i].Totals)
	}
	sameTotals(t, "by "+by+" total", r.Total.Totals, fixtureTotal)
	if r.Total.UnpricedTokens != 1010 { // mystery-model's, which no price table knows
		t.Errorf("by %s: unpriced tokens %d", by, r.Total.UnpricedTokens)
	}
	if !slices.Equal(r.UnpricedModels, []string{"mystery-model"}) {
		t.Errorf("by %s: unpriced %v", by, r.UnpricedModels)
	}
	if r.PricesCheckedAt != PricesCheckedAt {
		t.Errorf("PricesCheckedAt %q", r.PricesCheckedAt)
	}
}

// Every grouping, read from the request rows (the range is inside the retention).
func TestSummaryByEachGroupingFromRows(t *testing.T) {
	l := open(t, Options{Now: newClock(noon).now})
	for _, r := range fixture() {
		l.Record(r)
	}
	mustFlush(t, l)
	for _, by := range []string{"account", "model", "project", "day", "session"} {
		r := summary(t, l, Query{By: by})
		if r.FromRollups {
			t.Errorf("by %s: read roll-ups inside the retention", by)
		}
		if !r.Query.Since.Equal(noon.Add(-DefaultRetention)) || r.Query.By != by {
			t.Errorf("by %s: query as run %+v", by, r.Query)
		}
		checkReport(t, by, r)
	}
	// "" is "account".
	checkReport(t, "account", summary(t, l, Query{}))
	if _, err := l.Summary(context.Background(), Query{By: "route"}); err == nil {
		t.Error("an unknown grouping was accepted")
	}
	// Bounds are [Since, Until): only r3 (day2 09:00) and r4 (10:00).
	r := summary(t, l, Query{Since: day2.Add(9 * time.Hour), Until: day2.Add(11 * time.Hour), By: "account"})
	if len(r.Groups) != 1 || r.Groups[0].Key != "bob" || r.Total.Requests != 2 {
		t.Errorf("bounded summary: %+v", r.Groups)
	}
}

// The same sums from the daily roll-ups, once retention has deleted every row: the roll-ups
// are written with the rows and agree with them.
func TestSummaryByEachGroupingFromRollups(t *testing.T) {
	c := newClock(noon)
	l := open(t, Options{Now: c.now, Retention: 24 * time.Hour})
	for _, r := range fixture() {
		l.Record(r)
	}
	mustFlush(t, l)
	c.advance(2 * pruneEvery) // retention is due: the next write prunes
	mustFlush(t, l)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests`); n != 0 {
		t.Fatalf("%d rows left after retention", n)
	}
	for _, by := range []string{"account", "model", "project", "day"} {
		r := summary(t, l, Query{Since: day1, By: by})
		if !r.FromRollups {
			t.Errorf("by %s: did not read the roll-ups", by)
		}
		checkReport(t, by, r)
	}
	// Sessions are only in the rows: none are left.
	if r := summary(t, l, Query{Since: day1, By: "session"}); len(r.Groups) != 0 || r.Total.Requests != 0 {
		t.Errorf("session groups after retention: %+v", r.Groups)
	}
}

// A range that starts before the retention reads roll-ups for the old days and rows after,
// without counting anything twice.
func TestSummarySplitsRollupsAndRows(t *testing.T) {
	c := newClock(noon)
	// Retention 30h: the cut is day2 06:00, so day2 is the first partial day; day1 and day2
	// come from roll-ups (whole days), the rest from rows.
	l := open(t, Options{Now: c.now, Retention: 30 * time.Hour})
	for _, r := range fixture() {
		l.Record(r)
	}
	late := Row{Time: noon.Add(-time.Hour), Account: "carol", Model: "gpt-5-mini", Status: 200,
		InputTokens: 1_000_000, OutputTokens: 1_000_000} // 0.25 + 2 = 2.25
	l.Record(late)
	mustFlush(t, l)
	r := summary(t, l, Query{Since: day1, By: "account"})
	if !r.FromRollups {
		t.Error("no roll-ups read")
	}
	want := fixtureTotal
	want.Requests++
	want.InputTokens += 1_000_000
	want.OutputTokens += 1_000_000
	want.CostUSD += 2.25
	sameTotals(t, "total", r.Total.Totals, want)
	if len(r.Groups) != 3 || r.Groups[1].Key != "carol" || r.Groups[1].Requests != 1 { // bob, carol, alice by tokens
		t.Errorf("groups %+v", r.Groups)
	}
	// Until before the first whole retained day: roll-ups only, day1 alone.
	r = summary(t, l, Query{Since: day1, Until: day1.Add(23 * time.Hour), By: "day"})
	if len(r.Groups) != 1 || r.Groups[0].Key != "2026-11-02" || r.Total.Requests != 2 {
		t.Errorf("until-bounded roll-ups: %+v", r.Groups)
	}
}

func TestDailyFromRollupsByDayAndAccount(t *testing.T) {
	l := open(t, Options{Now: newClock(noon).now})
	for _, r := range fixture() {
		l.Record(r)
	}
	mustFlush(t, l)
	got, err := l.Daily(context.Background(), day1.Add(5*time.Hour)) // day1's date counts whole
	if err != nil {
		t.Fatal(err)
	}
	want := []DayByAccount{
		{"2026-11-02", "alice", Totals{Requests: 2, InputTokens: 1_200_000, CachedTokens: 400_000, OutputTokens: 120_000, ReasoningTokens: 50_000, CostUSD: 2.25}},
		{"2026-11-03", "alice", Totals{Requests: 1, Errors: 1, InputTokens: 100_000, CachedTokens: 50_000, CostUSD: 0.06875}},
		{"2026-11-03", "bob", Totals{Requests: 2, InputTokens: 2_001_000, CachedTokens: 1_000_000, OutputTokens: 400_010, CostUSD: 1.075}},
	}
	if len(got) != len(want) {
		t.Fatalf("Daily = %+v", got)
	}
	for i := range want {
		if got[i].Day != want[i].Day || got[i].Account != want[i].Account {
			t.Errorf("entry %d is %s/%s, want %s/%s", i, got[i].Day, got[i].Account, want[i].Day, want[i].Account)
		}
		sameTotals(t, want[i].Day+" "+want[i].Account, got[i].Totals, want[i].Totals)
	}
	got, _ = l.Daily(context.Background(), day2)
	if len(got) != 2 {
		t.Errorf("Daily from day2: %+v", got)
	}
}

// Price overrides apply to summaries and daily costs alike.
func TestPriceOverridesApply(t *testing.T) {
	l := open(t, Options{Now: newClock(noon).now, Prices: map[string]Price{
		"mystery-model": {Input: 1000, Output: 1000}, // 1010 tokens: 1.01
		"GPT-5":         {Input: 1, CachedInput: 1, Output: 1},
	}})
	for _, r := range fixture() {
		l.Record(r)
	}
	mustFlush(t, l)
	r := summary(t, l, Query{By: "model"})
	if len(r.UnpricedModels) != 0 {
		t.Errorf("unpriced %v", r.UnpricedModels)
	}
	costs := map[string]float64{}
	for _, g := range r.Groups {
		costs[g.Key] = g.CostUSD
	}
	// gpt-5 and its dated snapshot use the override: 1.1M tokens and 0.1M tokens at $1/M.
	for k, want := range map[string]float64{"mystery-model": 1.01, "gpt-5": 1.1, "gpt-5-2025-08-07": 0.1, "gpt-5-codex": 0.45} {
		if !near(costs[k], want) {
			t.Errorf("%s costs %v, want %v", k, costs[k], want)
		}
	}
	days, _ := l.Daily(context.Background(), day1)
	if !near(days[0].CostUSD, 1.1+0.45) {
		t.Errorf("daily cost %v", days[0].CostUSD)
	}
}

// Retention deletes old rows (and readings) but the roll-ups keep their days for Daily.
func TestRetentionKeepsRollups(t *testing.T) {
	now := time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC)
	c := newClock(now)
	l := open(t, Options{Now: c.now})
	old1, old2, recent := now.AddDate(0, 0, -500), now.AddDate(0, 0, -450), now.AddDate(0, 0, -1)
	for i, at := range []time.Time{old1, old2, recent} {
		l.Record(Row{Time: at, Account: "a", Model: "gpt-5", Status: 200, InputTokens: int64(1000 * (i + 1)), OutputTokens: 10})
	}
	l.RecordQuota(QuotaReading{Account: "a", Time: old1, PrimaryUsedPercent: 5})
	l.RecordQuota(QuotaReading{Account: "a", Time: recent, PrimaryUsedPercent: 7})
	mustFlush(t, l)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests`); n != 3 {
		t.Fatalf("%d rows before retention ran", n)
	}
	c.advance(pruneEvery) // the next write runs retention
	mustFlush(t, l)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests`); n != 1 {
		t.Errorf("%d rows after retention, want 1", n)
	}
	if n := count(t, l.db, `SELECT COUNT(*) FROM quota`); n != 1 {
		t.Errorf("%d quota readings after retention, want 1", n)
	}
	days, err := l.Daily(context.Background(), now.AddDate(0, 0, -600))
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 3 || days[0].Day != dayOf(old1) || days[0].InputTokens != 1000 ||
		days[1].Day != dayOf(old2) || days[1].InputTokens != 2000 || days[2].InputTokens != 3000 {
		t.Errorf("Daily after retention: %+v", days)
	}
	if r := summary(t, l, Query{By: "day"}); r.Total.Requests != 1 || r.Total.InputTokens != 3000 {
		t.Errorf("default summary covers %+v", r.Total)
	}
	if r := summary(t, l, Query{Since: now.AddDate(0, 0, -600), By: "day"}); len(r.Groups) != 3 || r.Total.InputTokens != 6000 {
		t.Errorf("long summary %+v", r.Groups)
	}

	// Open also runs retention: a ledger reopened a retention later keeps only roll-ups.
	path := l.Stats().Path
	l.Close()
	c.advance(DefaultRetention)
	l2 := open(t, Options{Path: path, Now: c.now})
	if n := count(t, l2.db, `SELECT COUNT(*) FROM requests`); n != 0 {
		t.Errorf("%d rows after reopening past retention", n)
	}
	if days, _ := l2.Daily(context.Background(), time.Time{}); len(days) != 3 {
		t.Errorf("roll-ups after reopening: %+v", days)
	}
}

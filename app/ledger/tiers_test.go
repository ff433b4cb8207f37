package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// tierRows are one request at each tier, on gpt-5 ($1.25 input, $0.125 cached, $10.00 output
// per million): 1,000,000 input tokens of which 200,000 cached, and 100,000 output, cost
// 0.8 x 1.25 + 0.2 x 0.125 + 0.1 x 10 = $2.025 at the standard price, $4.05 at priority.
func tierRows(at time.Time) []Row {
	r := func(account, tier string, omitted bool) Row {
		return Row{Time: at, Account: account, Model: "gpt-5", Status: 200, InputTokens: 1_000_000, CachedTokens: 200_000,
			OutputTokens: 100_000, ServiceTier: tier, ServiceTierOmitted: omitted}
	}
	return []Row{
		r("key", "priority", false), // $4.05
		r("seat", "fast", false),    // Codex's older name: priority, $4.05
		r("seat", "flex", true),     // left out for a ChatGPT account: standard, $2.025
		r("key", "flex", false),     // no row in the tier table: standard, $2.025
		r("key", "", false),         // no tier: standard, $2.025
		r("chat", "priority", true), // left out (a Chat account through translation): standard, $2.025
	}
}

const standardCost, priorityCost = 2.025, 4.05

// Each row keeps the tier it asked for ("fast" as priority), grouping by tier adds them up,
// and each is priced at the tier it was sent with.
func TestTierRecordingAndPricing(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := open(t, Options{Now: newClock(now).now})
	for _, r := range tierRows(now.Add(-time.Hour)) {
		l.Record(r)
	}
	mustFlush(t, l)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests WHERE service_tier = 'priority'`); n != 3 {
		t.Errorf("%d rows stored as priority, want 3 (priority, fast, priority left out)", n)
	}
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests WHERE tier_omitted = 1`); n != 2 {
		t.Errorf("%d rows stored as left out, want 2", n)
	}

	rep := summary(t, l, Query{By: "tier"})
	want := map[string]Totals{
		"priority": {Requests: 3, InputTokens: 3_000_000, CachedTokens: 600_000, OutputTokens: 300_000, CostUSD: 2*priorityCost + standardCost},
		"flex":     {Requests: 2, InputTokens: 2_000_000, CachedTokens: 400_000, OutputTokens: 200_000, CostUSD: 2 * standardCost},
		"":         {Requests: 1, InputTokens: 1_000_000, CachedTokens: 200_000, OutputTokens: 100_000, CostUSD: standardCost},
	}
	if len(rep.Groups) != len(want) {
		t.Fatalf("groups %+v", rep.Groups)
	}
	for _, g := range rep.Groups {
		sameTotals(t, "tier "+g.Key, g.Totals, want[g.Key])
	}
	if rep.Groups[0].Key != "priority" || rep.Groups[2].Key != "" {
		t.Errorf("groups in order %q %q %q, want by tokens", rep.Groups[0].Key, rep.Groups[1].Key, rep.Groups[2].Key)
	}
	if !near(rep.Total.CostUSD, 2*priorityCost+4*standardCost) || !near(rep.Total.CostUSD, 16.2) {
		t.Errorf("total cost %v, want 16.2", rep.Total.CostUSD)
	}
	if rep.TierMultipliers["priority"] != 2 || len(rep.TierMultipliers) != 1 {
		t.Errorf("report's tier multipliers %v", rep.TierMultipliers)
	}

	// Other groupings price the same way: by account, the key's priority request costs double.
	acc := summary(t, l, Query{By: "account"})
	costs := map[string]float64{}
	for _, g := range acc.Groups {
		costs[g.Key] = g.CostUSD
	}
	if !near(costs["key"], priorityCost+2*standardCost) || !near(costs["seat"], priorityCost+standardCost) || !near(costs["chat"], standardCost) {
		t.Errorf("costs by account %v", costs)
	}
	days, err := l.Daily(context.Background(), now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var daily float64
	for _, d := range days {
		daily += d.CostUSD
	}
	if !near(daily, 16.2) {
		t.Errorf("daily costs add up to %v, want 16.2", daily)
	}
}

// Past the rows' retention the roll-ups answer: by tier, with the same sums and prices.
func TestTierFromRollups(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	c := newClock(start)
	l := open(t, Options{Now: c.now, Retention: 48 * time.Hour})
	for _, r := range tierRows(start) {
		l.Record(r)
	}
	mustFlush(t, l)
	c.advance(10 * 24 * time.Hour) // the rows are past the retention: the next flush prunes them
	l.Record(Row{Account: "key", Model: "gpt-5", InputTokens: 1})
	mustFlush(t, l)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests WHERE at < ?`, c.now().Add(-48*time.Hour).UnixMilli()); n != 0 {
		t.Fatalf("%d old rows left: retention did not run", n)
	}
	rep := summary(t, l, Query{By: "tier", Since: start.Add(-24 * time.Hour)})
	if !rep.FromRollups {
		t.Fatal("the report did not read the roll-ups")
	}
	got := map[string]Totals{}
	for _, g := range rep.Groups {
		got[g.Key] = g.Totals
	}
	sameTotals(t, "priority from roll-ups", got["priority"], Totals{Requests: 3, InputTokens: 3_000_000, CachedTokens: 600_000,
		OutputTokens: 300_000, CostUSD: 2*priorityCost + standardCost})
	sameTotals(t, "flex from roll-ups", got["flex"], Totals{Requests: 2, InputTokens: 2_000_000, CachedTokens: 400_000,
		OutputTokens: 200_000, CostUSD: 2 * standardCost})
	if n := count(t, l.db, `SELECT COUNT(*) FROM daily_tiers WHERE day = '2026-11-01'`); n != 6 {
		t.Errorf("%d roll-up rows for the day, want 6 (one per account, tier and omission)", n)
	}
}

// version3 builds the layout this build's migrations 1 to 3 made (a file written before
// service tiers), with one request and its roll-up.
func version3(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := append([]string{}, version1[:3]...) // its tables, without its data and user_version
	for _, m := range migrations[1:3] {
		stmts = append(stmts, m.stmts...)
	}
	stmts = append(stmts,
		`INSERT INTO requests (at, account, model, served_model, route, transport, outcome, status, is_error,
			input_tokens, cached_tokens, output_tokens, reasoning_tokens, latency_ms, session, project)
			VALUES (1793620800000, 'seat', 'gpt-5', 'gpt-5', '/v1/responses', 'websocket', 'completed', 200, 0,
			1000000, 200000, 100000, 0, 10, 's', 'p')`,
		`INSERT INTO daily VALUES ('2026-11-02', 'seat', 'gpt-5', 'p', 1, 0, 1000000, 200000, 100000, 0, 10)`,
		`PRAGMA user_version = 3`)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// A database written before service tiers opens: its rows and roll-ups keep their sums,
// counted under no tier at the standard price, and new rows with a tier add to them.
func TestMigrateToServiceTiers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	version3(t, path)
	now := time.Date(2026, 11, 2, 18, 0, 0, 0, time.UTC) // the old row is 2026-11-02 12:00 UTC
	l := open(t, Options{Path: path, Now: newClock(now).now})
	if v := count(t, l.db, `PRAGMA user_version`); v != int64(SchemaVersion) {
		t.Fatalf("user_version %d after migrating", v)
	}
	checkFinalSchema(t, l.db)
	rep := summary(t, l, Query{By: "tier"})
	if len(rep.Groups) != 1 || rep.Groups[0].Key != "" {
		t.Fatalf("old data by tier: %+v", rep.Groups)
	}
	sameTotals(t, "the old row", rep.Groups[0].Totals, Totals{Requests: 1, InputTokens: 1_000_000, CachedTokens: 200_000,
		OutputTokens: 100_000, CostUSD: standardCost})

	l.Record(Row{Time: now, Account: "seat", Model: "gpt-5", Project: "p", Status: 200, InputTokens: 1_000_000,
		CachedTokens: 200_000, OutputTokens: 100_000, ServiceTier: "priority"})
	mustFlush(t, l)
	rep = summary(t, l, Query{By: "tier"})
	if len(rep.Groups) != 2 || !near(rep.Total.CostUSD, standardCost+priorityCost) {
		t.Errorf("after a priority request: %+v, total $%v", rep.Groups, rep.Total.CostUSD)
	}
	days, err := l.Daily(context.Background(), time.Time{})
	if err != nil || len(days) != 1 || days[0].Requests != 2 || !near(days[0].CostUSD, standardCost+priorityCost) {
		t.Errorf("roll-ups after migrating: %+v %v", days, err)
	}
	if n := count(t, l.db, `SELECT COUNT(*) FROM daily_tiers`); n != 2 {
		t.Errorf("%d roll-up rows, want 2 (the old one under no tier, the new under priority)", n)
	}
}

// A relay of the version before service tiers still runs on the file after a newer binary
// migrated it (the tray app outlives a package upgrade): its writes, a row without the tier
// columns and its upsert of daily on the old key, still succeed, and what it adds reaches
// the roll-up by tier.
func TestAnOlderWriterKeepsWritingAfterTheMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	version3(t, path)
	now := time.Date(2026, 11, 2, 18, 0, 0, 0, time.UTC)
	l := open(t, Options{Path: path, Now: newClock(now).now})
	// The version-3 writer's statements, as it sends them (the upsert is the old key's).
	for _, s := range []string{
		`INSERT INTO requests (at, account, model, served_model, route, transport, outcome, status, is_error,
			input_tokens, cached_tokens, output_tokens, reasoning_tokens, latency_ms, session, project)
			VALUES (1793642400000, 'seat', 'gpt-5', 'gpt-5', '/v1/responses', 'http', 'completed', 200, 0,
			1000000, 200000, 100000, 0, 10, 's', 'p')`,
		`INSERT INTO daily (day, account, model, project, requests, errors, input_tokens, cached_tokens, output_tokens,
			reasoning_tokens, latency_ms) VALUES ('2026-11-02', 'seat', 'gpt-5', 'p', 1, 0, 1000000, 200000, 100000, 0, 10)
			ON CONFLICT (day, account, model, project) DO UPDATE SET requests = requests + excluded.requests,
			errors = errors + excluded.errors, input_tokens = input_tokens + excluded.input_tokens,
			cached_tokens = cached_tokens + excluded.cached_tokens, output_tokens = output_tokens + excluded.output_tokens,
			reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens, latency_ms = latency_ms + excluded.latency_ms`,
		`INSERT INTO daily (day, account, model, project, requests, errors, input_tokens, cached_tokens, output_tokens,
			reasoning_tokens, latency_ms) VALUES ('2026-11-03', 'seat', 'gpt-5', 'p', 1, 0, 1000000, 200000, 100000, 0, 10)
			ON CONFLICT (day, account, model, project) DO UPDATE SET requests = requests + excluded.requests`,
	} {
		if _, err := l.db.Exec(s); err != nil {
			t.Fatalf("the older writer's statement is refused: %v", err)
		}
	}
	// Its two days reach the roll-up by tier, under no tier: the update as its difference.
	if n := count(t, l.db, `SELECT SUM(requests) FROM daily_tiers WHERE day = '2026-11-02' AND service_tier = ''`); n != 2 {
		t.Errorf("2026-11-02: %d requests in daily_tiers, want 2 (the migrated one and the older writer's)", n)
	}
	if n := count(t, l.db, `SELECT SUM(input_tokens) FROM daily_tiers WHERE day = '2026-11-03'`); n != 1_000_000 {
		t.Errorf("2026-11-03: %d input tokens in daily_tiers", n)
	}
	rep := summary(t, l, Query{By: "tier"})
	if rep.Total.Requests != 2 || rep.Groups[0].Key != "" {
		t.Errorf("the report after the older writer: %+v", rep)
	}
}

// The tier table: priority at 2x, everything else at the standard price; a copy is handed out.
func TestTierMultipliers(t *testing.T) {
	for tier, want := range map[string]float64{"priority": 2, "default": 1, "flex": 1, "auto": 1, "": 1, "turbo": 1} {
		if got := TierMultiplier(tier); got != want {
			t.Errorf("TierMultiplier(%q) = %v, want %v", tier, got, want)
		}
	}
	m := TierMultipliers()
	m["priority"] = 99
	if TierMultiplier("priority") != 2 {
		t.Error("TierMultipliers handed out the table itself")
	}
	if cleanTier("fast") != "priority" || cleanTier("pri\x1bority") != "priority" {
		t.Errorf("cleanTier: %q %q", cleanTier("fast"), cleanTier("pri\x1bority"))
	}
}

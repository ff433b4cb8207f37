package ledger

// Service tiers. Each row records the service tier its request asked for (Row.ServiceTier:
// "priority" for Codex's Fast mode, "" when the request named none) and whether the relay left
// it out of what the serving account received (Row.ServiceTierOmitted: the ChatGPT backend
// refuses flex, auto and scale, so those requests are served at the default tier). Reports group
// by the requested tier ("tier"), and price each request at the tier it was sent with: a tier
// with a row in tierMultipliers (prices.go) costs the model's list price times that multiple.

// tiersMigration is migration 4's statements: the two columns on requests, and the roll-up by
// tier, daily_tiers, keyed (day, account, model, project, service_tier, tier_omitted), which
// takes over from daily. Existing rows and roll-ups asked for no tier: they keep their sums
// under service_tier "". daily itself stays as it was, because a relay of an older version
// may still run on the same file (the tray app outlives a package upgrade): its writer upserts
// daily on the old key, and two triggers carry what it adds into daily_tiers (its rows in
// requests take the columns' defaults), so nothing it records is lost or refused.
var tiersMigration = []string{
	`ALTER TABLE requests ADD COLUMN service_tier TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE requests ADD COLUMN tier_omitted INTEGER NOT NULL DEFAULT 0`,
	`CREATE TABLE daily_tiers (
		day              TEXT    NOT NULL,
		account          TEXT    NOT NULL,
		model            TEXT    NOT NULL,
		project          TEXT    NOT NULL,
		service_tier     TEXT    NOT NULL,
		tier_omitted     INTEGER NOT NULL,
		requests         INTEGER NOT NULL,
		errors           INTEGER NOT NULL,
		input_tokens     INTEGER NOT NULL,
		cached_tokens    INTEGER NOT NULL,
		output_tokens    INTEGER NOT NULL,
		reasoning_tokens INTEGER NOT NULL,
		latency_ms       REAL    NOT NULL,
		PRIMARY KEY (day, account, model, project, service_tier, tier_omitted)
	) WITHOUT ROWID`,
	`INSERT INTO daily_tiers SELECT day, account, model, project, '', 0, requests, errors,
		input_tokens, cached_tokens, output_tokens, reasoning_tokens, latency_ms FROM daily`,
	`CREATE TRIGGER daily_insert_by_an_older_writer AFTER INSERT ON daily BEGIN
		INSERT INTO daily_tiers VALUES (NEW.day, NEW.account, NEW.model, NEW.project, '', 0,
			NEW.requests, NEW.errors, NEW.input_tokens, NEW.cached_tokens, NEW.output_tokens,
			NEW.reasoning_tokens, NEW.latency_ms)
		` + addToDailyTiers + `;
	END`,
	`CREATE TRIGGER daily_update_by_an_older_writer AFTER UPDATE ON daily BEGIN
		INSERT INTO daily_tiers VALUES (NEW.day, NEW.account, NEW.model, NEW.project, '', 0,
			NEW.requests - OLD.requests, NEW.errors - OLD.errors, NEW.input_tokens - OLD.input_tokens,
			NEW.cached_tokens - OLD.cached_tokens, NEW.output_tokens - OLD.output_tokens,
			NEW.reasoning_tokens - OLD.reasoning_tokens, NEW.latency_ms - OLD.latency_ms)
		` + addToDailyTiers + `;
	END`,
}

// pricedTier is the SQL expression, over requests or daily_tiers, of the tier a line is priced at:
// the tier asked for, unless it was left out (then the account's default, "").
const pricedTier = `CASE WHEN tier_omitted = 0 THEN service_tier ELSE '' END`

// The tiers the ledger knows by name.
const (
	TierPriority = "priority"
	// tierFast is the name older Codex builds gave priority; a row that says it is stored as
	// priority.
	tierFast = "fast"
)

// cleanTier is the tier as stored: cleaned like every client-chosen string, "fast" as
// priority.
func cleanTier(tier string) string {
	tier = field(tier)
	if tier == tierFast {
		return TierPriority
	}
	return tier
}

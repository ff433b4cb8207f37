package ledger

// Service tiers. Each row records the service tier its request asked for (Row.ServiceTier:
// "priority" for Codex's Fast mode, "" when the request named none) and whether the relay left
// it out of what the serving account received (Row.ServiceTierOmitted: the ChatGPT backend
// refuses flex, auto and scale, so those requests are served at the default tier). Reports group
// by the requested tier ("tier"), and price each request at the tier it was sent with: a tier
// with a row in tierMultipliers (prices.go) costs the model's list price times that multiple.

// tiersMigration is migration 4's statements: the two columns on requests, and daily rebuilt
// with them in its key (SQLite cannot change a primary key in place). Existing rows and
// roll-ups asked for no tier: they keep their sums under service_tier "".
var tiersMigration = []string{
	`ALTER TABLE requests ADD COLUMN service_tier TEXT NOT NULL DEFAULT ''`,
	`ALTER TABLE requests ADD COLUMN tier_omitted INTEGER NOT NULL DEFAULT 0`,
	`CREATE TABLE daily_v4 (
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
	`INSERT INTO daily_v4 SELECT day, account, model, project, '', 0, requests, errors,
		input_tokens, cached_tokens, output_tokens, reasoning_tokens, latency_ms FROM daily`,
	`DROP TABLE daily`,
	`ALTER TABLE daily_v4 RENAME TO daily`,
}

// pricedTier is the SQL expression, over requests or daily, of the tier a line is priced at:
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

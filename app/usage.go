package app

import (
	"path/filepath"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
)

// The usage ledger as the store knows it: its settings and where its database lives. The
// relay that serves (app/relay) records into it; `codexrelay usage` and the local API's usage
// routes read it.

// UsageSettings configure the usage ledger.
type UsageSettings struct {
	// Off stops recording (the database is kept).
	Off bool `json:"off,omitempty"`
	// RetentionDays is how long request rows are kept (default 400); daily totals stay.
	RetentionDays int `json:"retention_days,omitempty"`
	// Prices override the built-in price table, by model, in USD per million tokens.
	Prices map[string]ledger.Price `json:"prices,omitempty"`
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

// CompactionDir is where the serving relay keeps the requests that produced the conversations'
// compactions, so that a compaction survives a rotation after a restart (proxy/compaction.go):
// beside the usage database.
func (a *App) CompactionDir() string {
	return filepath.Join(filepath.Dir(a.LedgerPath()), "compactions")
}

// ParseSince reads a --since or ?since= value: a duration back from now ("7d", "36h", "90m")
// or a date ("2026-11-01", from its start in UTC).
func ParseSince(s string, now time.Time) (time.Time, error) { return ledger.ParseSince(s, now) }

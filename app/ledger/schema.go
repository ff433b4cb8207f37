package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The schema lives in PRAGMA user_version: 0 is an empty file, N means migrations 1..N have
// run. Each migration runs in its own write transaction together with the user_version bump,
// so a crash mid-migration leaves the file at the previous version, never between two.
//
// Tables (final layout, version 2):
//
//	requests  one row per finished request; deleted by retention.
//	          at (unix ms, UTC), account, model (as asked), served_model (after aliases, the
//	          model priced; never ""), route, transport (v2), outcome, status, is_error,
//	          input/cached/output/reasoning tokens, latency_ms, session, project.
//	          Indexes: requests_at (at), requests_account_at (account, at; v2).
//	daily     roll-up keyed (day "YYYY-MM-DD" UTC, account, model = served_model, project):
//	          requests, errors, the four token sums and the latency sum. Updated in the same
//	          transaction as the rows it sums; never deleted by retention.
//	quota     ChatGPT window readings keyed (account, at): primary (five-hour) and secondary
//	          (weekly) used percent and resets-at (unix s, 0 when unknown); v2; deleted by
//	          retention like requests.
//	events    things that happened to an account, one row each (v3; events.go): at (unix ms),
//	          kind, account, detail (JSON); kept for good.
//
// Version 4 (tiers.go) adds to requests the service tier the request asked for (service_tier,
// "" when none) and whether it was left out of what the serving account received
// (tier_omitted, 0 or 1), and the roll-up daily_tiers, keyed (day, account, model, project,
// service_tier, tier_omitted), which takes over from daily (kept, with triggers, for a relay
// of an older version still writing it).
//
// Adding migration 3 is one more entry at the end of migrations; nothing else changes.
type migration struct {
	version int
	name    string
	stmts   []string
}

var migrations = []migration{
	{1, "requests and daily roll-ups", []string{
		`CREATE TABLE requests (
			id               INTEGER PRIMARY KEY,
			at               INTEGER NOT NULL,
			account          TEXT    NOT NULL,
			model            TEXT    NOT NULL,
			served_model     TEXT    NOT NULL,
			route            TEXT    NOT NULL,
			outcome          TEXT    NOT NULL,
			status           INTEGER NOT NULL,
			is_error         INTEGER NOT NULL,
			input_tokens     INTEGER NOT NULL,
			cached_tokens    INTEGER NOT NULL,
			output_tokens    INTEGER NOT NULL,
			reasoning_tokens INTEGER NOT NULL,
			latency_ms       REAL    NOT NULL,
			session          TEXT    NOT NULL,
			project          TEXT    NOT NULL
		)`,
		`CREATE INDEX requests_at ON requests(at)`,
		`CREATE TABLE daily (
			day              TEXT    NOT NULL,
			account          TEXT    NOT NULL,
			model            TEXT    NOT NULL,
			project          TEXT    NOT NULL,
			requests         INTEGER NOT NULL,
			errors           INTEGER NOT NULL,
			input_tokens     INTEGER NOT NULL,
			cached_tokens    INTEGER NOT NULL,
			output_tokens    INTEGER NOT NULL,
			reasoning_tokens INTEGER NOT NULL,
			latency_ms       REAL    NOT NULL,
			PRIMARY KEY (day, account, model, project)
		) WITHOUT ROWID`,
	}},
	{2, "transport column, quota readings, per-account index", []string{
		`ALTER TABLE requests ADD COLUMN transport TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX requests_account_at ON requests(account, at)`,
		`CREATE TABLE quota (
			account             TEXT    NOT NULL,
			at                  INTEGER NOT NULL,
			primary_used        REAL    NOT NULL,
			primary_resets_at   INTEGER NOT NULL,
			secondary_used      REAL    NOT NULL,
			secondary_resets_at INTEGER NOT NULL,
			PRIMARY KEY (account, at)
		) WITHOUT ROWID`,
	}},
	{3, "events: reset-credit redemptions", eventsMigration},
	{4, "service tiers: requests and daily roll-ups by tier", tiersMigration},
}

// SchemaVersion is the user_version a database has once Open has migrated it.
var SchemaVersion = migrations[len(migrations)-1].version

// ErrNewerSchema is returned by Open for a database written by a newer Codex Relay (its
// user_version is above SchemaVersion). The file is left as it is.
var ErrNewerSchema = errors.New("ledger: the database was written by a newer version of Codex Relay")

// migrate brings db up to SchemaVersion, one transaction per migration. The version is read
// inside each write transaction, so two processes migrating at once apply each step once. A
// database already at SchemaVersion costs one read and takes no write lock.
func migrate(ctx context.Context, db *sql.DB) error {
	var v int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w (schema %d, this build knows %d)", ErrNewerSchema, v, SchemaVersion)
	}
	if v == SchemaVersion {
		return nil
	}
	for _, m := range migrations {
		if err := migrateOne(ctx, db, m); err != nil {
			return fmt.Errorf("ledger: migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func migrateOne(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the DSN's _txlock
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w (schema %d, this build knows %d)", ErrNewerSchema, v, SchemaVersion)
	}
	if v >= m.version {
		return nil
	}
	if v != m.version-1 {
		return fmt.Errorf("schema is at version %d", v)
	}
	for _, s := range m.stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `PRAGMA user_version = `+strconv.Itoa(m.version)); err != nil {
		return err
	}
	return tx.Commit()
}

// dsn is the connection string for path: every pooled connection waits up to busy for a lock,
// syncs in WAL's NORMAL mode (a committed transaction survives a process crash; a power loss
// may lose the last ones) and starts write transactions with BEGIN IMMEDIATE, so a writer
// never has to upgrade a read lock (which can fail at once with SQLITE_BUSY).
func dsn(path string, busy time.Duration) string {
	return path + "?_pragma=busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")" +
		"&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

// openChecked opens path, switches it to WAL, checks it with PRAGMA quick_check and migrates
// it. quick_check reads every page once: its cost grows with the file (roughly a second per
// few hundred megabytes), which is why Open is meant to run off the UI thread.
func openChecked(ctx context.Context, path string, busy time.Duration) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn(path, busy))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	fail := func(err error) (*sql.DB, error) {
		db.Close()
		return nil, err
	}
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return fail(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fail(fmt.Errorf("ledger: journal_mode is %q, not wal", mode))
	}
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return fail(err)
	}
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return fail(err)
		}
		if s != "ok" && len(problems) < 3 {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fail(err)
	}
	rows.Close()
	if len(problems) > 0 {
		return fail(&corruptError{msg: "quick_check: " + strings.Join(problems, "; ")})
	}
	if err := migrate(ctx, db); err != nil {
		return fail(err)
	}
	return db, nil
}

// corruptError is a failed quick_check.
type corruptError struct{ msg string }

func (e *corruptError) Error() string { return e.msg }

// isCorrupt tells a damaged file (not a database, malformed pages, failed quick_check) from
// every other failure. Only a damaged file is set aside: a locked, unreadable or newer
// database is reported and left alone.
func isCorrupt(err error) bool {
	var ce *corruptError
	if errors.As(err, &ce) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return false
}

// setAside renames a damaged database, with its -wal and -shm files, to
// "<path>.corrupt-<unix time>" (plus the same suffixes), so a new database can start at path
// and nothing is deleted. It returns the new name of the main file.
func setAside(path string, now time.Time) (string, error) {
	aside := path + ".corrupt-" + strconv.FormatInt(now.Unix(), 10)
	for i := 1; fileExists(aside); i++ {
		aside = path + ".corrupt-" + strconv.FormatInt(now.Unix(), 10) + "-" + strconv.Itoa(i)
	}
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if fileExists(path + suffix) {
			if err := os.Rename(path+suffix, aside+suffix); err != nil {
				return aside, err
			}
		}
	}
	return aside, nil
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// prepareFile makes the directory (0700) and creates an empty database file readable by its
// owner only, so the usage history is not world-readable (it holds no secret, but it is
// private). An existing file is left as it is.
func prepareFile(path string) error {
	if strings.ContainsRune(path, '?') {
		return fmt.Errorf("ledger: database path %q must not contain '?'", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

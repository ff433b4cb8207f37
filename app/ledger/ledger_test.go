package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain doubles as the crash child of TestKilledProcessKeepsFlushedRows.
func TestMain(m *testing.M) {
	if path := os.Getenv("LEDGER_CRASH_CHILD"); path != "" {
		crashChild(path)
	}
	os.Exit(m.Run())
}

// crashChild records 100 rows and flushes them, then keeps writing batches of 10 (recording
// 10, flushing) from another goroutine and exits, without Close, in the middle of that: the
// exit lands between a Record and its Flush or inside a write transaction.
func crashChild(path string) {
	l, err := Open(Options{Path: path, FlushEvery: time.Hour})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	row := func(account string, i int) Row {
		return Row{Account: account, Model: "gpt-5", Status: 200, InputTokens: int64(i), Session: fmt.Sprint("s", i)}
	}
	for i := range 100 {
		l.Record(row("first", i))
	}
	if err := l.Flush(); err != nil {
		fmt.Println("flush:", err)
		os.Exit(3)
	}
	var batches atomic.Int64
	go func() {
		for i := 0; ; i++ {
			for j := range 10 {
				l.Record(row("batch", 10*i+j))
			}
			if l.Flush() == nil {
				batches.Add(1)
			}
		}
	}()
	for batches.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("flushed")
	os.Exit(0)
}

// A process that dies without Close keeps every flushed row, and the file opens clean.
func TestKilledProcessKeepsFlushedRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LEDGER_CRASH_CHILD="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "flushed") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	l := open(t, Options{Path: path})
	if s := l.Stats(); s.Recovered != "" {
		t.Fatalf("the file was set aside: %s", s.Recovered)
	}
	var check string
	if err := l.db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
	n := count(t, l.db, `SELECT COUNT(*) FROM requests`)
	if first := count(t, l.db, `SELECT COUNT(*) FROM requests WHERE account = 'first'`); first != 100 {
		t.Errorf("%d of the first 100 flushed rows survived", first)
	}
	// At least 20 batches of 10 were flushed; each batch is all or nothing, even the one the
	// exit may have cut.
	if batch := count(t, l.db, `SELECT COUNT(*) FROM requests WHERE account = 'batch'`); batch < 20*10 || batch%10 != 0 {
		t.Errorf("%d batch rows after the crash", batch)
	}
	// The roll-ups were committed with the rows.
	if d := count(t, l.db, `SELECT SUM(requests) FROM daily_tiers`); d != n {
		t.Errorf("roll-ups count %d requests, rows %d", d, n)
	}
}

// A full queue drops and counts, and Record returns while the writer is stuck.
func TestFullQueueDropsAndNeverBlocks(t *testing.T) {
	l := open(t, Options{QueueSize: 8})
	l.writeMu.Lock() // the writer (and Flush) cannot start a write
	for i := range 20 {
		l.Record(Row{Account: "a", Model: "gpt-5", InputTokens: int64(i)})
	}
	s := l.Stats()
	if s.Queued != 8 || s.Dropped != 12 || s.Written != 0 {
		t.Errorf("while blocked: %+v", s)
	}
	l.writeMu.Unlock()
	mustFlush(t, l)
	s = l.Stats()
	if s.Queued != 0 || s.Dropped != 12 || s.Written != 8 {
		t.Errorf("after flush: %+v", s)
	}
	// The first eight were kept, in order.
	if n := count(t, l.db, `SELECT SUM(input_tokens) FROM requests`); n != 0+1+2+3+4+5+6+7 {
		t.Errorf("kept rows sum to %d", n)
	}
}

// Rows in flight count against the bound: a write under way plus new rows never exceed it.
func TestQueueBoundIncludesRowsInFlight(t *testing.T) {
	l := open(t, Options{QueueSize: 4})
	// The writer (woken early when the queue is half full) must not take the queue meanwhile.
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	for range 3 {
		l.Record(Row{Account: "a"})
	}
	l.mu.Lock()
	batch := l.queue // what a writer would take
	l.queue, l.inflight = nil, len(batch)
	l.mu.Unlock()
	l.Record(Row{Account: "b"})
	l.Record(Row{Account: "c"}) // 3 in flight + 1 queued: full
	if s := l.Stats(); s.Queued != 4 || s.Dropped != 1 {
		t.Errorf("%+v", s)
	}
}

// A database locked by another process: the writer fails after the busy timeout, keeps the
// rows, reports the error, and writes them once the lock is gone. Record never waits.
func TestLockedDatabaseKeepsRowsQueued(t *testing.T) {
	l := open(t, Options{BusyTimeout: 20 * time.Millisecond})
	other, err := sql.Open("sqlite", l.Stats().Path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		l.Record(Row{Account: "a", Model: "gpt-5", InputTokens: 1})
	}
	if err := l.Flush(); err == nil {
		t.Fatal("Flush succeeded on a locked database")
	}
	s := l.Stats()
	if s.Queued != 5 || s.Written != 0 || s.LastError == "" || s.LastErrorAt.IsZero() {
		t.Errorf("while locked: %+v", s)
	}
	if !strings.Contains(s.LastError, "locked") && !strings.Contains(s.LastError, "BUSY") {
		t.Errorf("LastError does not say locked: %q", s.LastError)
	}
	l.Record(Row{Account: "a", Model: "gpt-5", InputTokens: 1}) // returns while locked
	// Readers are not blocked by another process's write lock (WAL).
	if r := summary(t, l, Query{}); r.Total.Requests != 0 {
		t.Errorf("summary while locked: %+v", r.Total)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, l)
	s = l.Stats()
	if s.Queued != 0 || s.Written != 6 || s.LastError != "" {
		t.Errorf("after the lock: %+v", s)
	}

	// Close while locked: the rows it cannot write are counted as dropped.
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	l.Record(Row{Account: "a"})
	l.Record(Row{Account: "a"})
	if err := l.Close(); err == nil {
		t.Error("Close reported no error for rows it could not write")
	}
	if s := l.Stats(); s.Dropped != 2 || s.Queued != 0 {
		t.Errorf("after Close: %+v", s)
	}
	conn.ExecContext(ctx, `ROLLBACK`)
}

// Opening a database that another process holds locked still works (an up-to-date schema
// needs no write lock); the failed retention pass is reported, not fatal.
func TestOpenWhileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	l := open(t, Options{Path: path})
	l.Close()
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	l2 := open(t, Options{Path: path, BusyTimeout: 20 * time.Millisecond})
	if s := l2.Stats(); !strings.Contains(s.LastError, "retention") || s.Recovered != "" {
		t.Errorf("opened while locked: %+v", s)
	}
	conn.ExecContext(ctx, `ROLLBACK`)
	l2.Record(Row{Account: "a"})
	mustFlush(t, l2)
	if s := l2.Stats(); s.LastError != "" || s.Written != 1 {
		t.Errorf("after the lock: %+v", s)
	}
}

// A file of garbage is moved aside and a new database started; Open succeeds and says so.
func TestCorruptFileIsSetAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "usage.db")
	garbage := make([]byte, 16<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.UintN(256))
	}
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	l := open(t, Options{Path: path, Now: newClock(now).now})
	aside := fmt.Sprintf("%s.corrupt-%d", path, now.Unix())
	s := l.Stats()
	if !strings.Contains(s.Recovered, aside) {
		t.Errorf("Recovered = %q, want it to name %s", s.Recovered, aside)
	}
	if b, err := os.ReadFile(aside); err != nil || !bytes.Equal(b, garbage) {
		t.Errorf("the damaged file was not kept as it was: %v", err)
	}
	l.Record(Row{Account: "a", Model: "gpt-5", InputTokens: 10})
	mustFlush(t, l)
	if r := summary(t, l, Query{}); r.Total.Requests != 1 {
		t.Errorf("new database: %+v", r.Total)
	}
	if l.Stats().Recovered == "" {
		t.Error("Recovered was forgotten after a write")
	}
}

// A real database whose pages were overwritten fails quick_check and is set aside too.
func TestDamagedPagesAreSetAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	l := open(t, Options{Path: path})
	for i := range 3000 {
		l.Record(Row{Account: "a", Model: "gpt-5", Session: strings.Repeat("x", 100) + fmt.Sprint(i), InputTokens: 1})
	}
	mustFlush(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8*4096 {
		t.Fatalf("database only %d bytes", len(b))
	}
	for i := 2 * 4096; i < len(b)-4096; i++ { // keep page 1 (header and schema), ruin the rest
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	l2 := open(t, Options{Path: path})
	if l2.Stats().Recovered == "" {
		t.Fatal("a database with ruined pages was not set aside")
	}
	if r := summary(t, l2, Query{}); r.Total.Requests != 0 {
		t.Errorf("new database holds %+v", r.Total)
	}
	matches, _ := filepath.Glob(path + ".corrupt-*")
	if len(matches) != 1 {
		t.Errorf("set-aside files: %v", matches)
	}
}

// A database from a newer version is refused and left untouched.
func TestNewerSchemaIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(Options{Path: path, FlushEvery: time.Hour}); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open = %v, want ErrNewerSchema", err)
	}
	db, _ = sql.Open("sqlite", path)
	defer db.Close()
	if v := count(t, db, `PRAGMA user_version`); v != 99 {
		t.Errorf("user_version now %d", v)
	}
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 0 {
		t.Errorf("a newer database was set aside: %v", m)
	}
}

// Open on nothing creates the final schema in WAL mode, owner-only.
func TestMigrateFromEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "usage.db")
	l := open(t, Options{Path: path})
	if v := count(t, l.db, `PRAGMA user_version`); v != int64(SchemaVersion) || SchemaVersion != 4 {
		t.Errorf("user_version %d, SchemaVersion %d", v, SchemaVersion)
	}
	var mode string
	l.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode %q", mode)
	}
	if n := count(t, l.db, `PRAGMA synchronous`); n != 1 { // NORMAL
		t.Errorf("synchronous %d", n)
	}
	checkFinalSchema(t, l.db)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v %v", fi.Mode(), err)
	}
	// Opening again runs no migration and changes nothing.
	l.Close()
	l2 := open(t, Options{Path: path})
	if v := count(t, l2.db, `PRAGMA user_version`); v != int64(SchemaVersion) {
		t.Errorf("user_version after reopening %d", v)
	}
}

func checkFinalSchema(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, name := range []string{"requests", "daily", "daily_tiers", "quota", "requests_at", "requests_account_at", "events", "events_at",
		"daily_insert_by_an_older_writer", "daily_update_by_an_older_writer"} {
		if n := count(t, db, `SELECT COUNT(*) FROM sqlite_master WHERE name = ?`, name); n != 1 {
			t.Errorf("%s missing", name)
		}
	}
	if n := count(t, db, `SELECT COUNT(*) FROM pragma_table_info('requests') WHERE name = 'transport'`); n != 1 {
		t.Error("requests.transport missing")
	}
	for _, table := range []string{"requests", "daily_tiers"} {
		if n := count(t, db, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name IN ('service_tier', 'tier_omitted')`, table); n != 2 {
			t.Errorf("%s lacks the service tier columns (v4)", table)
		}
	}
	if n := count(t, db, `SELECT COUNT(*) FROM pragma_table_info('daily_tiers') WHERE pk > 0`); n != 6 {
		t.Errorf("daily_tiers' key has %d columns, want 6 (day, account, model, project, service_tier, tier_omitted)", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM pragma_table_info('daily') WHERE pk > 0`); n != 4 {
		t.Errorf("daily's key has %d columns: an older relay's upsert on (day, account, model, project) would be refused", n)
	}
}

// version1 is the layout migration 1 produced, frozen here: a file written by the first
// release. It has no transport column, no quota table and no per-account index.
var version1 = []string{
	`CREATE TABLE requests (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, account TEXT NOT NULL,
		model TEXT NOT NULL, served_model TEXT NOT NULL, route TEXT NOT NULL, outcome TEXT NOT NULL,
		status INTEGER NOT NULL, is_error INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
		cached_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL,
		latency_ms REAL NOT NULL, session TEXT NOT NULL, project TEXT NOT NULL)`,
	`CREATE INDEX requests_at ON requests(at)`,
	`CREATE TABLE daily (day TEXT NOT NULL, account TEXT NOT NULL, model TEXT NOT NULL, project TEXT NOT NULL,
		requests INTEGER NOT NULL, errors INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
		cached_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, reasoning_tokens INTEGER NOT NULL,
		latency_ms REAL NOT NULL, PRIMARY KEY (day, account, model, project)) WITHOUT ROWID`,
	`INSERT INTO requests (at, account, model, served_model, route, outcome, status, is_error, input_tokens,
		cached_tokens, output_tokens, reasoning_tokens, latency_ms, session, project)
		VALUES (1793530800000, 'old', 'gpt-5', 'gpt-5', '/v1/responses', 'completed', 200, 0, 1000000, 0, 0, 0, 10, 's', 'p')`,
	`INSERT INTO daily VALUES ('2026-11-01', 'old', 'gpt-5', 'p', 1, 0, 1000000, 0, 0, 0, 10)`,
	`PRAGMA user_version = 1`,
}

// A version-1 file migrates to version 2 keeping its data; what version 2 adds works.
func TestMigrateFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range version1 {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()

	now := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // the old row is 2026-11-01 11:00 UTC
	l := open(t, Options{Path: path, Now: newClock(now).now})
	if v := count(t, l.db, `PRAGMA user_version`); v != int64(SchemaVersion) {
		t.Fatalf("user_version %d after migrating", v)
	}
	checkFinalSchema(t, l.db)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests WHERE account = 'old' AND transport = ''`); n != 1 {
		t.Errorf("the old row did not survive with an empty transport (%d)", n)
	}
	r := summary(t, l, Query{By: "account"})
	if len(r.Groups) != 1 || r.Groups[0].Key != "old" || !near(r.Total.CostUSD, 1.25) {
		t.Errorf("old data: %+v", r.Groups)
	}
	l.Record(Row{Time: now, Account: "new", Model: "gpt-5", Transport: "websocket", InputTokens: 1})
	l.RecordQuota(QuotaReading{Account: "new", Time: now, PrimaryUsedPercent: 3})
	mustFlush(t, l)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests WHERE transport = 'websocket'`); n != 1 {
		t.Error("transport not stored after migrating")
	}
	b, err := l.Burn(context.Background(), "new")
	if err != nil || b.Latest.PrimaryUsedPercent != 3 {
		t.Errorf("Burn after migrating: %+v %v", b, err)
	}
	days, _ := l.Daily(context.Background(), time.Time{})
	if len(days) != 2 || days[0].Account != "old" || days[0].InputTokens != 1_000_000 {
		t.Errorf("roll-ups after migrating: %+v", days)
	}
}

// A migration that fails leaves the file at its previous version (each step is one
// transaction with its user_version bump).
func TestFailedMigrationRollsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range version1 {
		db.Exec(s)
	}
	// Something already named like what migration 2 creates makes it fail half-way.
	if _, err := db.Exec(`CREATE TABLE quota (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(Options{Path: path, FlushEvery: time.Hour}); err == nil || !strings.Contains(err.Error(), "migration 2") {
		t.Fatalf("Open = %v", err)
	}
	db, _ = sql.Open("sqlite", path)
	defer db.Close()
	if v := count(t, db, `PRAGMA user_version`); v != 1 {
		t.Errorf("user_version %d", v)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM pragma_table_info('requests') WHERE name = 'transport'`); n != 0 {
		t.Error("half of migration 2 was kept")
	}
}

// Many goroutines record while others read and flush: nothing is lost or counted twice.
func TestConcurrentRecordAndSummary(t *testing.T) {
	l := open(t, Options{QueueSize: 1 << 14, FlushEvery: time.Millisecond})
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				l.Record(Row{Account: fmt.Sprint("acct", w%3), Model: "gpt-5", Project: fmt.Sprint("p", i%4),
					Session: fmt.Sprint("s", w), Status: 200, InputTokens: 10, CachedTokens: 5, OutputTokens: 1})
			}
		}()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for _, by := range []string{"account", "project", "session", "day"} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := l.Summary(context.Background(), Query{By: by})
				if err != nil {
					t.Error(err)
					return
				}
				if r.Total.Requests > writers*each {
					t.Errorf("counted %d requests", r.Total.Requests)
				}
				l.Stats()
				l.Flush()
			}
		}()
	}
	wg.Wait()
	mustFlush(t, l)
	close(stop)
	readers.Wait()
	r := summary(t, l, Query{By: "session"})
	if r.Total.Requests != writers*each || r.Total.InputTokens != writers*each*10 || len(r.Groups) != writers {
		t.Errorf("after all writes: %+v in %d groups", r.Total, len(r.Groups))
	}
	if s := l.Stats(); s.Dropped != 0 || s.Written != writers*each {
		t.Errorf("stats %+v", s)
	}
	d := summary(t, l, Query{Since: time.Unix(0, 0), By: "project"}) // from roll-ups and rows
	if d.Total.Requests != writers*each {
		t.Errorf("roll-ups count %d", d.Total.Requests)
	}
}

// After Close nothing panics: Record counts drops, reads say ErrClosed. A nil Ledger is inert.
func TestClosedAndNilLedger(t *testing.T) {
	l := open(t, Options{})
	l.Record(Row{Account: "a"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	l.Record(Row{Account: "a"})
	l.RecordQuota(QuotaReading{Account: "a"})
	if s := l.Stats(); s.Written != 1 || s.Dropped != 2 {
		t.Errorf("after Close: %+v", s)
	}
	if err := l.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	ctx := context.Background()
	if _, err := l.Summary(ctx, Query{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Summary after Close: %v", err)
	}
	if _, err := l.Daily(ctx, time.Time{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Daily after Close: %v", err)
	}

	var nl *Ledger
	nl.Record(Row{})
	nl.RecordQuota(QuotaReading{})
	if nl.Flush() != nil || nl.Close() != nil || nl.Stats() != (Stats{}) {
		t.Error("nil ledger is not inert")
	}
	if _, err := nl.Burn(ctx, "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("nil Burn: %v", err)
	}
	if _, err := nl.Forecast(ctx, nil, time.Now()); !errors.Is(err, ErrClosed) {
		t.Errorf("nil Forecast: %v", err)
	}
}

// Rows are bounded before storage: long strings capped, negative counts zeroed, the served
// model defaulting to the asked one, a zero time stamped with the ledger's clock.
func TestRowsAreCleaned(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	l := open(t, Options{Now: newClock(now).now})
	l.Record(Row{Account: strings.Repeat("é", 300), Model: "gpt-5", InputTokens: -4, OutputTokens: 3})
	mustFlush(t, l)
	var account, served string
	var at, in int64
	if err := l.db.QueryRow(`SELECT account, served_model, at, input_tokens FROM requests`).Scan(&account, &served, &at, &in); err != nil {
		t.Fatal(err)
	}
	if len(account) > maxField || !strings.HasPrefix(account, "éé") || strings.ContainsRune(account, '\uFFFD') {
		t.Errorf("account stored as %d bytes", len(account))
	}
	if served != "gpt-5" || at != now.UnixMilli() || in != 0 {
		t.Errorf("stored served=%q at=%d input=%d", served, at, in)
	}
}

// The writer goroutine flushes on its own, FlushEvery after a row is queued: rows reach the
// database without Flush, and a row queued after the writer went back to sleep wakes it again.
func TestWriterFlushesOnItsOwn(t *testing.T) {
	l := open(t, Options{FlushEvery: time.Millisecond})
	written := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for l.Stats().Written != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d rows written after 10 s, want %d", l.Stats().Written, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	l.Record(Row{Account: "a", Model: "gpt-5"})
	written(1)
	time.Sleep(20 * time.Millisecond) // the writer sleeps: nothing is queued
	l.Record(Row{Account: "a", Model: "gpt-5"})
	written(2)
	if n := count(t, l.db, `SELECT COUNT(*) FROM requests`); n != 2 {
		t.Errorf("%d rows", n)
	}
}

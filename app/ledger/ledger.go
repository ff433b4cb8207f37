// Package ledger is Codex Relay's persistent usage ledger: one SQLite row per finished request
// (tokens, latency, outcome), daily roll-ups kept past the rows' retention, and the ChatGPT
// quota readings that turn tokens into "tokens per 1% of a window".
//
// Writing never gets in the way of a request. Record copies the row into a bounded in-memory
// queue under a mutex and returns; a single writer goroutine commits the queue every
// FlushEvery (sooner when the queue is half full) in one transaction that inserts the rows and
// upserts their roll-ups. When the queue is full a row is dropped and counted, never waited
// for. When the database cannot be written (locked by another process past the busy timeout,
// disk full) the rows stay queued, up to the same bound, and Stats().LastError says why.
//
// Durability: a committed batch survives a crash of the process (WAL, synchronous=NORMAL);
// a crash loses at most the rows of the last FlushEvery. A power loss may also lose the last
// committed batches. The database holds only the Row and QuotaReading fields: no tokens, no
// keys, no prompt text.
//
// Reading (Summary, Daily, Burn, Forecast) goes through the same database with WAL readers,
// which never block the writer nor are blocked by it.
package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/adrg/xdg"
)

// Row is one finished request. It carries no secret: account is the account's display name or
// ID, never its credential.
type Row struct {
	Time time.Time // when the request finished; zero means now
	// Account answered the request ("" when none did). Model is the model as the client asked;
	// ServedModel the one sent upstream after aliases ("" means the same as Model): costs and
	// the "model" grouping use ServedModel.
	Account, Model, ServedModel string
	Route, Transport, Outcome   string // e.g. "/v1/responses", "http" or "websocket", "completed"
	Status                      int    // the HTTP status the client got
	// Token counts as the upstream reported them: CachedTokens are part of InputTokens and
	// ReasoningTokens part of OutputTokens.
	InputTokens, CachedTokens, OutputTokens, ReasoningTokens int64
	LatencyMs                                                float64
	// Session is the prompt_cache_key (or session header); Project the workspace name the
	// Codex CLI sent ("" when unknown).
	Session, Project string
	// ServiceTier is the service tier the request asked for ("priority" for Codex's Fast mode;
	// "fast" is stored as priority; "" when it named none). ServiceTierOmitted says the relay
	// left it out of what the serving account received, which served it at its default tier:
	// the row is then priced at the standard price (tiers.go).
	ServiceTier        string
	ServiceTierOmitted bool
}

// QuotaReading is one reading of a ChatGPT account's usage windows: primary is the five-hour
// window, secondary the weekly one (the same names as proxy.Quota). A zero ResetsAt means
// unknown.
type QuotaReading struct {
	Account              string
	Time                 time.Time // when it was read; zero means now
	PrimaryUsedPercent   float64
	PrimaryResetsAt      time.Time
	SecondaryUsedPercent float64
	SecondaryResetsAt    time.Time
}

// Options configure Open. Zero values take the defaults.
type Options struct {
	// Path is the database file (default DefaultPath()). Its directory is created (0700) and
	// the file, when new, is made readable by its owner only.
	Path string
	// Retention is how long request rows and quota readings are kept (default 400 days).
	// Daily roll-ups are never deleted by retention.
	Retention time.Duration
	// QueueSize bounds the rows waiting to be written (default 4096), including rows kept
	// after a failed write. A Record that finds it full drops the row and counts it.
	QueueSize int
	// FlushEvery is the writer's interval (default 1 s): a crash loses at most the rows
	// recorded in the last FlushEvery.
	FlushEvery time.Duration
	// BusyTimeout is how long a statement waits for a lock held by another connection or
	// process before failing (default 5 s). Only the writer goroutine and readers wait;
	// Record never does.
	BusyTimeout time.Duration
	// Now is the clock (default time.Now); it stamps rows without a Time and drives retention.
	Now func() time.Time
	// Prices override the built-in table, by model name (see LookupPrice).
	Prices map[string]Price
	// ReadOnly opens the ledger for reading (a report): it never prunes (retention is the
	// writer's, with the retention the user set) and never moves a damaged file aside; Record
	// and RecordQuota drop what they are given.
	ReadOnly bool
}

// Defaults.
const (
	DefaultRetention   = 400 * 24 * time.Hour
	DefaultQueueSize   = 4096
	DefaultFlushEvery  = time.Second
	DefaultBusyTimeout = 5 * time.Second
	// quotaQueueSize bounds the quota readings waiting to be written (a few per account per
	// flush at most in practice).
	quotaQueueSize = 1024
	// pruneEvery is how often, by the ledger's clock, retention runs after Open.
	pruneEvery = time.Hour
	// maxField caps every stored string (bytes), so one odd client cannot bloat the file.
	maxField = 256
)

// DefaultPath is the database under the XDG data directory: $XDG_DATA_HOME/codexrelay/usage.db.
func DefaultPath() string { return filepath.Join(xdg.DataHome, "codexrelay", "usage.db") }

// ErrClosed is returned by the reading methods of a closed (or nil) Ledger.
var ErrClosed = errors.New("ledger: closed")

// Stats is the ledger's own health, for the dashboard and /metrics. It holds no secret: errors
// are SQLite's and the file system's messages.
type Stats struct {
	Path    string
	Written int64 // rows committed since Open
	// Dropped counts rows (and quota readings) that will never be written: the queue was full,
	// the ledger was closed, or the final write at Close failed.
	Dropped int64
	Queued  int // rows waiting, including rows kept after a failed write
	// LastError is the last write failure, "" once a write succeeds again.
	LastError   string
	LastErrorAt time.Time
	// Recovered is set when Open found a damaged database: it says where the old file was
	// moved and why. It stays set for the ledger's life.
	Recovered string
}

// Ledger is an open usage ledger. Its methods are safe for concurrent use. Record,
// RecordQuota, Flush, Close and Stats accept a nil *Ledger (no-ops), so a relay that could not
// open its ledger keeps serving without one.
type Ledger struct {
	db        *sql.DB
	path      string
	now       func() time.Time
	retention time.Duration
	queueSize int
	prices    map[string]Price
	recovered string
	readOnly  bool

	// mu guards the queues; it is held only to append or to swap slices, never during I/O.
	mu            sync.Mutex
	queue         []Row // waiting, oldest first
	spare         []Row // the other buffer of the double buffer, empty
	inflight      int   // rows taken by the writer and not yet committed
	quotas        []QuotaReading
	quotaInflight int
	closed        bool

	written, dropped atomic.Int64

	errMu     sync.Mutex
	lastErr   string
	lastErrAt time.Time

	// writeMu serializes writes (the writer goroutine, Flush, Close); lastPrune is under it.
	writeMu   sync.Mutex
	lastPrune time.Time

	kick      chan struct{} // wakes the writer early when the queue is half full
	queued    chan struct{} // tells the writer that the queue is no longer empty
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	dbClosed  bool        // under writeMu: Close has closed db
	shut      atomic.Bool // Close has begun: reads return ErrClosed
}

// Open opens (creating, checking and migrating) the ledger database and starts its writer.
//
// A damaged file (not a database, or failing PRAGMA quick_check) is moved aside as
// "<path>.corrupt-<unix time>" and a new database is started; Open then succeeds and
// Stats().Recovered says so. A database that is unreadable, written by a newer version
// (ErrNewerSchema), or due a migration while another process holds it locked past
// BusyTimeout is left alone and Open returns the error: the caller runs without a ledger. An
// up-to-date database locked by another process opens (reading needs no lock in WAL mode);
// its writes wait and are reported in Stats().LastError until the lock goes.
//
// Cost: one quick_check (reads the whole file once), the migrations still due, and one
// retention pass.
func Open(opt Options) (*Ledger, error) {
	if opt.Path == "" {
		opt.Path = DefaultPath()
	}
	if opt.Retention <= 0 {
		opt.Retention = DefaultRetention
	}
	if opt.QueueSize <= 0 {
		opt.QueueSize = DefaultQueueSize
	}
	if opt.FlushEvery <= 0 {
		opt.FlushEvery = DefaultFlushEvery
	}
	if opt.BusyTimeout <= 0 {
		opt.BusyTimeout = DefaultBusyTimeout
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	ctx := context.Background()
	if err := prepareFile(opt.Path); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	db, err := openChecked(ctx, opt.Path, opt.BusyTimeout)
	recovered := ""
	if err != nil && isCorrupt(err) && !opt.ReadOnly {
		aside, aerr := setAside(opt.Path, opt.Now())
		if aerr != nil {
			return nil, fmt.Errorf("ledger: database %s is damaged (%v) and could not be moved aside: %w", opt.Path, err, aerr)
		}
		recovered = fmt.Sprintf("the database was damaged (%v); it was moved to %s and a new one started", err, aside)
		if err = prepareFile(opt.Path); err == nil {
			db, err = openChecked(ctx, opt.Path, opt.BusyTimeout)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", opt.Path, err)
	}
	l := &Ledger{
		db:        db,
		path:      opt.Path,
		now:       opt.Now,
		retention: opt.Retention,
		queueSize: opt.QueueSize,
		prices:    normalizePrices(opt.Prices),
		recovered: recovered,
		readOnly:  opt.ReadOnly,
		queue:     make([]Row, 0, min(opt.QueueSize, 256)),
		kick:      make(chan struct{}, 1),
		queued:    make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if err := l.prune(ctx); err != nil {
		l.setErr(err)
	}
	go l.writer(opt.FlushEvery)
	return l, nil
}

// Record queues r for the writer. It never blocks on I/O and never panics: it takes a mutex
// for an append (well under a microsecond; see BenchmarkRecord). A full queue or a closed
// ledger drops the row and counts it in Stats().Dropped; a nil ledger ignores it.
func (l *Ledger) Record(r Row) {
	if l == nil {
		return
	}
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	l.mu.Lock()
	if l.closed || l.readOnly || len(l.queue)+l.inflight >= l.queueSize {
		l.mu.Unlock()
		l.dropped.Add(1)
		return
	}
	l.queue = append(l.queue, r)
	first := len(l.queue) == 1
	half := len(l.queue)+l.inflight >= l.queueSize/2
	l.mu.Unlock()
	if first {
		signal(l.queued)
	}
	if half {
		signal(l.kick)
	}
}

// signal wakes whoever waits on ch (cap 1) without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// RecordQuota queues a quota reading, like Record (its own bound: 1024 readings).
func (l *Ledger) RecordQuota(q QuotaReading) {
	if l == nil {
		return
	}
	if q.Time.IsZero() {
		q.Time = l.now()
	}
	l.mu.Lock()
	if l.closed || l.readOnly || len(l.quotas)+l.quotaInflight >= quotaQueueSize {
		l.mu.Unlock()
		l.dropped.Add(1)
		return
	}
	l.quotas = append(l.quotas, q)
	first := len(l.quotas) == 1
	l.mu.Unlock()
	if first {
		signal(l.queued)
	}
}

// Flush writes everything queued when it is called, in one transaction, and returns the
// write's error (the rows then stay queued). It waits for a write already under way.
func (l *Ledger) Flush() error {
	if l == nil {
		return nil
	}
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if l.dbClosed {
		return ErrClosed
	}
	return l.flushLocked()
}

// Close stops the writer, writes what is queued, and closes the database. Rows recorded after
// Close starts are dropped and counted. Close is idempotent; later calls return the first
// call's result.
func (l *Ledger) Close() error {
	if l == nil {
		return nil
	}
	l.closeOnce.Do(func() {
		l.shut.Store(true)
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.stop)
		<-l.done
		l.writeMu.Lock()
		defer l.writeMu.Unlock()
		err := l.flushLocked()
		if err != nil {
			l.mu.Lock()
			lost := len(l.queue) + len(l.quotas)
			l.queue, l.quotas = nil, nil
			l.mu.Unlock()
			l.dropped.Add(int64(lost))
		}
		if cerr := l.db.Close(); err == nil {
			err = cerr
		}
		l.dbClosed = true
		l.closeErr = err
	})
	return l.closeErr
}

// Stats reports the ledger's counters; cheap (two mutexes, no I/O).
func (l *Ledger) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	s := Stats{Path: l.path, Written: l.written.Load(), Dropped: l.dropped.Load(), Recovered: l.recovered}
	l.mu.Lock()
	s.Queued = len(l.queue) + l.inflight
	l.mu.Unlock()
	l.errMu.Lock()
	s.LastError, s.LastErrorAt = l.lastErr, l.lastErrAt
	l.errMu.Unlock()
	return s
}

func (l *Ledger) setErr(err error) {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if err == nil {
		l.lastErr, l.lastErrAt = "", time.Time{}
		return
	}
	l.lastErr, l.lastErrAt = err.Error(), l.now()
}

// writer commits the queue every interval while rows are queued, or at once when Record finds
// the queue half full, until Close. Failures are reported in Stats and retried an interval
// later. With nothing queued it sleeps: no tick wakes an idle relay (issue 39), so retention
// (prune) runs at the first write after pruneEvery, and at Open.
func (l *Ledger) writer(every time.Duration) {
	defer close(l.done)
	t := time.NewTimer(every)
	t.Stop()
	armed := false
	for {
		select {
		case <-l.stop:
			t.Stop()
			return
		case <-l.queued:
			if !armed {
				t.Reset(every)
				armed = true
			}
			continue
		case <-t.C:
		case <-l.kick:
			t.Stop()
		}
		armed = false
		l.writeMu.Lock()
		l.flushLocked()
		l.writeMu.Unlock()
		l.mu.Lock()
		left := len(l.queue) > 0 || len(l.quotas) > 0 // a failed write's rows, or rows recorded meanwhile
		l.mu.Unlock()
		if left {
			t.Reset(every)
			armed = true
		}
	}
}

// flushLocked takes the queue, commits it, and either forgets the rows (success) or puts them
// back in front of the rows recorded meanwhile (failure; the bound still holds because Record
// counted the rows in flight). It then runs retention when pruneEvery has passed. The caller
// holds writeMu.
func (l *Ledger) flushLocked() error {
	l.mu.Lock()
	batch, quotas := l.queue, l.quotas
	l.queue, l.spare = l.spare[:0], nil
	l.quotas = nil
	l.inflight, l.quotaInflight = len(batch), len(quotas)
	l.mu.Unlock()

	err := l.write(context.Background(), batch, quotas)

	l.mu.Lock()
	l.inflight, l.quotaInflight = 0, 0
	if err != nil {
		l.queue = append(batch, l.queue...)
		l.quotas = append(quotas, l.quotas...)
	} else {
		clear(batch) // let the strings go
		l.spare = batch[:0]
	}
	l.mu.Unlock()

	if err != nil {
		l.setErr(fmt.Errorf("ledger: write %d rows: %w", len(batch), err))
		return err
	}
	l.written.Add(int64(len(batch)))
	if now := l.now(); now.Sub(l.lastPrune) >= pruneEvery {
		if perr := l.prune(context.Background()); perr != nil {
			l.setErr(perr)
			return nil // the rows are written; retention retries next time
		}
	}
	l.setErr(nil)
	return nil
}

// dayKey identifies one roll-up row.
type dayKey struct {
	day, account, model, project, tier string
	tierOmitted                        bool
}

// dayAgg is what one batch adds to one roll-up row.
type dayAgg struct {
	requests, errors                 int64
	input, cached, output, reasoning int64
	latency                          float64
}

const insertRow = `INSERT INTO requests (at, account, model, served_model, route, transport, outcome,
	status, is_error, input_tokens, cached_tokens, output_tokens, reasoning_tokens, latency_ms, session, project,
	service_tier, tier_omitted)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const upsertDaily = `INSERT INTO daily_tiers (day, account, model, project, service_tier, tier_omitted, requests, errors,
	input_tokens, cached_tokens, output_tokens, reasoning_tokens, latency_ms)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ` + addToDailyTiers

// addToDailyTiers makes an insert into daily_tiers add its sums to the line of the same key:
// the writer's upsert and the triggers that carry an older writer's daily into it.
const addToDailyTiers = `ON CONFLICT (day, account, model, project, service_tier, tier_omitted) DO UPDATE SET
	requests = requests + excluded.requests,
	errors = errors + excluded.errors,
	input_tokens = input_tokens + excluded.input_tokens,
	cached_tokens = cached_tokens + excluded.cached_tokens,
	output_tokens = output_tokens + excluded.output_tokens,
	reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens,
	latency_ms = latency_ms + excluded.latency_ms`

const insertQuota = `INSERT OR REPLACE INTO quota (account, at, primary_used, primary_resets_at,
	secondary_used, secondary_resets_at) VALUES (?, ?, ?, ?, ?, ?)`

// write commits rows and readings in one transaction: each row inserted, then one upsert per
// (day, account, model, project, tier) the batch touches. Cost: one prepared insert per row plus one
// upsert per distinct roll-up key, one fsync of the WAL at most (synchronous=NORMAL).
func (l *Ledger) write(ctx context.Context, rows []Row, quotas []QuotaReading) error {
	if len(rows) == 0 && len(quotas) == 0 {
		return nil
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if len(rows) > 0 {
		ins, err := tx.PrepareContext(ctx, insertRow)
		if err != nil {
			return err
		}
		defer ins.Close()
		days := make(map[dayKey]*dayAgg)
		for i := range rows {
			r := clean(rows[i])
			isErr := int64(0)
			if isError(r) {
				isErr = 1
			}
			if _, err := ins.ExecContext(ctx, r.Time.UnixMilli(), r.Account, r.Model, r.ServedModel, r.Route,
				r.Transport, r.Outcome, r.Status, isErr, r.InputTokens, r.CachedTokens, r.OutputTokens,
				r.ReasoningTokens, r.LatencyMs, r.Session, r.Project, r.ServiceTier, r.ServiceTierOmitted); err != nil {
				return err
			}
			k := dayKey{dayOf(r.Time), r.Account, r.ServedModel, r.Project, r.ServiceTier, r.ServiceTierOmitted}
			a := days[k]
			if a == nil {
				a = &dayAgg{}
				days[k] = a
			}
			a.requests++
			a.errors += isErr
			a.input += r.InputTokens
			a.cached += r.CachedTokens
			a.output += r.OutputTokens
			a.reasoning += r.ReasoningTokens
			a.latency += r.LatencyMs
		}
		up, err := tx.PrepareContext(ctx, upsertDaily)
		if err != nil {
			return err
		}
		defer up.Close()
		for k, a := range days {
			if _, err := up.ExecContext(ctx, k.day, k.account, k.model, k.project, k.tier, k.tierOmitted, a.requests, a.errors,
				a.input, a.cached, a.output, a.reasoning, a.latency); err != nil {
				return err
			}
		}
	}
	for _, q := range quotas {
		if _, err := tx.ExecContext(ctx, insertQuota, field(q.Account), q.Time.UnixMilli(),
			q.PrimaryUsedPercent, unixOrZero(q.PrimaryResetsAt),
			q.SecondaryUsedPercent, unixOrZero(q.SecondaryResetsAt)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// prune deletes request rows and quota readings older than the retention; roll-ups stay.
// Cost: an index range scan over the deleted rows only.
func (l *Ledger) prune(ctx context.Context) error {
	if l.readOnly {
		return nil
	}
	now := l.now()
	cut := now.Add(-l.retention).UnixMilli()
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger: retention: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []string{`DELETE FROM requests WHERE at < ?`, `DELETE FROM quota WHERE at < ?`} {
		if _, err := tx.ExecContext(ctx, q, cut); err != nil {
			return fmt.Errorf("ledger: retention: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger: retention: %w", err)
	}
	l.lastPrune = now
	return nil
}

// isError says whether a request counts as an error: an HTTP error status, or an answer that
// failed or broke off (a client that went away is not an error of the relay).
func isError(r Row) bool {
	switch r.Outcome {
	case "failed", "interrupted", "error":
		return true
	}
	return r.Status >= 400
}

// clean bounds a row before storage: strings cleaned (see field), negative counts raised to 0,
// ServedModel defaulting to Model.
func clean(r Row) Row {
	r.Account, r.Model, r.ServedModel = field(r.Account), field(r.Model), field(r.ServedModel)
	r.Route, r.Transport, r.Outcome = field(r.Route), field(r.Transport), field(r.Outcome)
	r.Session, r.Project, r.ServiceTier = field(r.Session), field(r.Project), cleanTier(r.ServiceTier)
	if r.ServiceTier == "" {
		r.ServiceTierOmitted = false // nothing to leave out
	}
	if r.ServedModel == "" {
		r.ServedModel = r.Model
	}
	r.InputTokens, r.CachedTokens = max(r.InputTokens, 0), max(r.CachedTokens, 0)
	r.OutputTokens, r.ReasoningTokens = max(r.OutputTokens, 0), max(r.ReasoningTokens, 0)
	if r.LatencyMs < 0 || r.LatencyMs != r.LatencyMs { // negative or NaN
		r.LatencyMs = 0
	}
	return r
}

// field cleans a string a client chose (a project, a session, a model) before storage: valid
// UTF-8, without C0 and C1 control characters, DEL, or the bidirectional overrides and
// isolates that make text display in another order than it is stored (Trojan Source), and
// capped at maxField bytes.
func field(s string) string {
	if len(s) > 4*maxField {
		s = s[:4*maxField] // enough to fill maxField once cleaned, in the common case
	}
	s = strings.Map(func(r rune) rune {
		if IsUnsafeRune(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) > maxField {
		s = strings.ToValidUTF8(s[:maxField], "")
	}
	return s
}

// IsUnsafeRune reports whether r is a control character (C0, DEL, C1) or a bidirectional
// override, embedding or isolate (U+202A-U+202E, U+2066-U+2069), or the implicit marks
// U+200E, U+200F and U+061C: characters that a terminal or a viewer acts on rather than shows.
func IsUnsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// dayOf is the UTC date of t as stored in daily_tiers.day.
func dayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

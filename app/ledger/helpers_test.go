package ledger

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable clock, safe for the writer goroutine to read.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// open opens a ledger in a temporary directory whose writer never runs on its own during a
// test (FlushEvery is an hour and tests call Flush), and closes it at the end of the test.
func open(t testing.TB, opt Options) *Ledger {
	t.Helper()
	if opt.Path == "" {
		opt.Path = filepath.Join(t.TempDir(), "usage.db")
	}
	if opt.FlushEvery == 0 {
		opt.FlushEvery = time.Hour
	}
	l, err := Open(opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustFlush(t testing.TB, l *Ledger) {
	t.Helper()
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func summary(t testing.TB, l *Ledger, q Query) Report {
	t.Helper()
	r, err := l.Summary(context.Background(), q)
	if err != nil {
		t.Fatalf("Summary(%+v): %v", q, err)
	}
	return r
}

// count runs a single-integer query on the ledger's own database.
func count(t testing.TB, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// sameTotals compares everything but the cache-hit ratio, which is checked from the sums.
func sameTotals(t testing.TB, what string, got, want Totals) {
	t.Helper()
	if got.Requests != want.Requests || got.Errors != want.Errors || got.InputTokens != want.InputTokens ||
		got.CachedTokens != want.CachedTokens || got.OutputTokens != want.OutputTokens ||
		got.ReasoningTokens != want.ReasoningTokens || !near(got.CostUSD, want.CostUSD) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	wantRatio := 0.0
	if got.InputTokens > 0 {
		wantRatio = float64(got.CachedTokens) / float64(got.InputTokens)
	}
	if !near(got.CacheHitRatio, wantRatio) {
		t.Errorf("%s: cache-hit ratio %v, want %v", what, got.CacheHitRatio, wantRatio)
	}
}

package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A reader (codexrelay usage) never prunes, at Open nor at Close, whatever its retention: a
// read-only report pruned with the default 400 days, ignoring usage-retention-days (issue 24).
func TestAReaderNeverPrunes(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "usage.db")
	w := open(t, Options{Path: path, Now: newClock(now).now, Retention: 1000 * 24 * time.Hour})
	w.Record(Row{Time: now.Add(-500 * 24 * time.Hour), Account: "a", Model: "gpt-5", InputTokens: 1})
	w.Record(Row{Time: now.Add(-20 * 24 * time.Hour), Account: "a", Model: "gpt-5", InputTokens: 1})
	mustFlush(t, w)
	for _, retention := range []time.Duration{0, 10 * 24 * time.Hour} { // the default, and shorter
		r, err := Open(Options{Path: path, Now: newClock(now.Add(2 * pruneEvery)).now, Retention: retention, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		r.Record(Row{Account: "b", Model: "gpt-5"}) // dropped: a reader writes nothing
		summary(t, r, Query{Since: now.Add(-600 * 24 * time.Hour), By: "session"})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if n := count(t, w.db, `SELECT COUNT(*) FROM requests`); n != 2 {
			t.Fatalf("retention %s: %d rows left after a read", retention, n)
		}
	}
}

// A reader leaves a damaged database where it is, and says so.
func TestAReaderLeavesADamagedFileAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	garbage := bytes.Repeat([]byte("not a database "), 1024)
	os.WriteFile(path, garbage, 0o600)
	if _, err := Open(Options{Path: path, ReadOnly: true}); err == nil {
		t.Fatal("a damaged database opened for reading")
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, garbage) {
		t.Fatal("the damaged file was changed")
	}
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 0 {
		t.Fatalf("a reader moved it aside: %v", m)
	}
}

// Text a client chose is stored without control characters or bidirectional overrides: a
// project named with terminal escapes or a right-to-left override (issue 24).
func TestStoredTextIsCleanedOfControlsAndBidiOverrides(t *testing.T) {
	l := open(t, Options{})
	hostile := "\x1b]8;;http://x\x07ev\u202eil\u2066\u0085\x7f\ttab\r\nend\u200f"
	l.Record(Row{Account: "a", Model: "gpt-5\x1b[2J", Project: hostile, Session: "s\x00\u009b31m"})
	l.RecordQuota(QuotaReading{Account: "q\x1b[31m"})
	mustFlush(t, l)
	var model, project, session, quota string
	if err := l.db.QueryRow(`SELECT model, project, session FROM requests`).Scan(&model, &project, &session); err != nil {
		t.Fatal(err)
	}
	l.db.QueryRow(`SELECT account FROM quota`).Scan(&quota)
	for _, s := range []string{model, project, session, quota} {
		if strings.IndexFunc(s, IsUnsafeRune) >= 0 {
			t.Errorf("stored %q", s)
		}
	}
	if project != "]8;;http://xeviltabend" || model != "gpt-5[2J" {
		t.Errorf("stored project %q, model %q", project, model)
	}
}

package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Events are the things that happened to an account that are worth a line of history: a reset
// credit redeemed (by hand or by the auto policy) or a redemption that failed. They are rare
// (a few a week), so each is written at once, not queued like request rows, and kept for good.

// eventsMigration is migration 3's statements.
var eventsMigration = []string{
	`CREATE TABLE events (
		id      INTEGER PRIMARY KEY,
		at      INTEGER NOT NULL,
		kind    TEXT    NOT NULL,
		account TEXT    NOT NULL,
		detail  TEXT    NOT NULL
	)`,
	`CREATE INDEX events_at ON events(at)`,
}

// The kinds of Event.
const (
	EventCreditRedeemed     = "reset_credit_redeemed"
	EventCreditRedeemFailed = "reset_credit_failed"
)

// Event is one row of the events table.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Account string    `json:"account"`
	// Detail is what happened, as JSON the caller made (a redemption's result); it must hold
	// no secret. It is stored as given up to 4 KiB.
	Detail string `json:"detail"`
}

// maxDetail bounds an event's detail.
const maxDetail = 4 << 10

// ErrReadOnly is returned when writing to a ledger opened read-only.
var ErrReadOnly = errors.New("ledger: opened read-only")

// RecordEvent writes e at once (it waits for the database, up to its busy timeout).
func (l *Ledger) RecordEvent(ctx context.Context, e Event) error {
	if l == nil || l.shut.Load() {
		return ErrClosed
	}
	if l.readOnly {
		return ErrReadOnly
	}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	detail := e.Detail
	if len(detail) > maxDetail {
		// Cut, it would not be JSON any more: keep what it was, as a string.
		b, _ := json.Marshal(map[string]any{"truncated": true, "start": strings.ToValidUTF8(detail[:maxDetail/2], "")})
		detail = string(b)
	}
	_, err := l.db.ExecContext(ctx, `INSERT INTO events (at, kind, account, detail) VALUES (?, ?, ?, ?)`,
		e.Time.UnixMilli(), field(e.Kind), field(e.Account), detail)
	if err != nil {
		return fmt.Errorf("ledger: recording an event: %w", err)
	}
	return nil
}

// Events returns the events since since (all: the zero time), newest first, at most limit
// (0: 100).
func (l *Ledger) Events(ctx context.Context, since time.Time, limit int) ([]Event, error) {
	if l == nil || l.shut.Load() {
		return nil, ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := l.db.QueryContext(ctx, `SELECT at, kind, account, detail FROM events WHERE at >= ? ORDER BY at DESC, id DESC LIMIT ?`,
		since.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var at int64
		if err := rows.Scan(&at, &e.Kind, &e.Account, &e.Detail); err != nil {
			return nil, err
		}
		e.Time = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

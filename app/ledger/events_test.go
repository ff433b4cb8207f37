package ledger

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An event is written at once and read back newest first; its kind and account are cleaned like
// every stored string, its detail bounded.
func TestEventsAreWrittenAtOnceAndReadNewestFirst(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := open(t, Options{Path: filepath.Join(t.TempDir(), "usage.db"), Now: newClock(now).now})
	ctx := context.Background()
	if err := l.RecordEvent(ctx, Event{Time: now.Add(-time.Hour), Kind: EventCreditRedeemFailed, Account: "plus\x1b[2J", Detail: `{"error":"no answer"}`}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordEvent(ctx, Event{Kind: EventCreditRedeemed, Account: "plus", Detail: `{"code":"` + strings.Repeat("x", 10000) + `"}`}); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Events(ctx, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Kind != EventCreditRedeemed || !evs[0].Time.Equal(now) || len(evs[0].Detail) > maxDetail ||
		!json.Valid([]byte(evs[0].Detail)) || !strings.HasPrefix(evs[0].Detail, `{"start":"{\"code\":\"xxx`) ||
		evs[1].Account != "plus[2J" || evs[1].Detail != `{"error":"no answer"}` {
		t.Fatalf("events %+v", evs)
	}
	if evs, _ := l.Events(ctx, now.Add(-time.Minute), 0); len(evs) != 1 {
		t.Fatalf("since: %d events", len(evs))
	}
	l.Close()
	if err := l.RecordEvent(ctx, Event{Kind: EventCreditRedeemed}); err != ErrClosed {
		t.Fatalf("after Close: %v", err)
	}
}

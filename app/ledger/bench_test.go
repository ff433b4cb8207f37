package ledger

import (
	"fmt"
	"testing"
	"time"
)

func benchRow(i int) Row {
	return Row{Time: time.Unix(1_790_000_000+int64(i), 0), Account: fmt.Sprint("acct", i%4),
		Model: "gpt-5-codex", ServedModel: "gpt-5.1-codex", Route: "/v1/responses", Transport: "websocket",
		Outcome: "completed", Status: 200, InputTokens: 12000, CachedTokens: 9000, OutputTokens: 800,
		ReasoningTokens: 300, LatencyMs: 850, Session: fmt.Sprint("0f6e3c1a-5b2d-4e8f-9a7c-", i%50), Project: "codexrelay"}
}

// BenchmarkRecord is Record's cost on the caller (the request path): a mutex and an append.
// Every 4000 rows the queue is emptied in memory with the timer stopped, before it is half
// full (which would wake the writer), so every timed Record takes the accepting path and the
// database is not involved: its cost is the writer's, measured by BenchmarkWrite.
func BenchmarkRecord(b *testing.B) {
	l := open(b, Options{QueueSize: 8192})
	rows := make([]Row, 64)
	for i := range rows {
		rows[i] = benchRow(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%4000 == 3999 {
			b.StopTimer()
			l.mu.Lock()
			clear(l.queue)
			l.queue = l.queue[:0]
			l.mu.Unlock()
			b.StartTimer()
		}
		l.Record(rows[i%len(rows)])
	}
	b.StopTimer()
	if s := l.Stats(); s.Dropped != 0 {
		b.Fatalf("dropped %d", s.Dropped)
	}
}

// BenchmarkWrite is the writer's sustained rate: batches of 100k rows committed by Flush
// (inserts plus roll-up upserts), reported in rows/s.
func BenchmarkWrite(b *testing.B) {
	const batch = 100_000
	l := open(b, Options{QueueSize: 4 * batch}) // never half full: the writer is not woken
	var spent time.Duration
	for n := 0; n < b.N; n++ {
		b.StopTimer()
		for i := range batch {
			l.Record(benchRow(n*batch + i))
		}
		b.StartTimer()
		start := time.Now()
		mustFlush(b, l)
		spent += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(batch*b.N)/spent.Seconds(), "rows/s")
	if s := l.Stats(); s.Written != int64(batch*b.N) || s.Dropped != 0 {
		b.Fatalf("stats %+v", s)
	}
}

package bench

import (
	"fmt"
	"os"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// The ledger phase of `bench proxy`: what recording each request in a usage ledger costs a
// small request, against the same relay without one, in the same run; and how many rows a
// second the ledger writes when fed without pause. The ledger comes from ProxyOptions.Ledger
// (the app's SQLite ledger, in a temporary folder), so that this package needs no database.

// LedgerSink opens a usage ledger in dir: hook records a finished request's trace (it must
// not block), flush writes what is queued, close flushes, closes and reports the rows written.
type LedgerSink func(dir string) (Ledger, error)

// Ledger is a usage ledger the benchmark feeds.
type Ledger struct {
	Hook  func(proxy.Trace)
	Flush func() error
	Close func() (written int64, err error)
}

// LedgerResult is the ledger phase's result.
type LedgerResult struct {
	Requests int `json:"requests"` // small requests per side
	// The relay's p50 time of a small request with the ledger on and off, and the difference
	// (target: under 20 us).
	OnP50Us    float64 `json:"onP50Us"`
	OffP50Us   float64 `json:"offP50Us"`
	AddedP50Us float64 `json:"addedP50Us"`
	// Rows written per second when fed as fast as the writer takes them, and how many of the
	// 100,000 fed were written.
	RowsPerSecond float64 `json:"rowsPerSecond"`
	RowsWritten   int64   `json:"rowsWritten"`
	Skipped       bool    `json:"skipped,omitempty"` // no LedgerSink given
}

// ledger alternates blocks of small requests with the ledger's hook on and off.
func (r *proxyRun) ledger() error {
	res := &r.res.Ledger
	if r.opt.Ledger == nil {
		res.Skipped = true
		return nil
	}
	dir, err := os.MkdirTemp("", "codexrelay-bench-ledger-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lg, err := r.opt.Ledger(dir)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	hook := lg.Hook
	defer r.relay.SetTraceHook(nil)
	n := r.opt.SmallRequests
	block := min(50, max(1, n/4)) // requests in a row on one side
	var on, off []float64
	for i := 0; i < 2*n; i++ {
		withLedger := (i/block)%2 == 0
		if withLedger {
			r.relay.SetTraceHook(hook)
		} else {
			r.relay.SetTraceHook(nil)
		}
		t0 := time.Now()
		if err := drain(r.post(r.relayURL, smallBody)); err != nil {
			return err
		}
		d := float64(time.Since(t0).Nanoseconds()) / 1e3
		if withLedger {
			on = append(on, d)
		} else {
			off = append(off, d)
		}
	}
	r.relay.SetTraceHook(nil)
	res.Requests = n
	res.OnP50Us, res.OffP50Us = quantile(on, 0.5), quantile(off, 0.5)
	res.AddedP50Us = res.OnP50Us - res.OffP50Us
	if _, err := lg.Close(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}

	// Sustained writing: a fresh ledger fed 100,000 rows in bursts of 2,000 (half its queue),
	// each burst written before the next; rows per second over the whole run.
	if lg, err = r.opt.Ledger(dir + "/sustained"); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	tr := proxy.Trace{Time: time.Now(), Route: "responses", Model: "gpt-5-codex", ResolvedModel: "gpt-5-codex", Status: 200,
		Outcome: proxy.OutcomeCompleted, Account: "bench", Transport: proxy.TransportHTTP, Session: "bench-session",
		Usage: &proxy.Usage{InputTokens: 12000, CachedTokens: 9000, OutputTokens: 800, ReasoningTokens: 300}}
	const rows = 100000
	t0 := time.Now()
	for i := 0; i < rows; i++ {
		lg.Hook(tr)
		if i%2000 == 1999 {
			if err := lg.Flush(); err != nil {
				return fmt.Errorf("ledger: %w", err)
			}
		}
	}
	written, err := lg.Close()
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	res.RowsWritten = written
	res.RowsPerSecond = float64(written) / time.Since(t0).Seconds()
	return nil
}

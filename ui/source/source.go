// Package source is what the tray process (ui/tray) and the window process (ui/window) read
// of the relay, and how: its stats and recent requests (Source), its usage ledger
// (UsageSource, RelayUsage), what the windows ask of its listener (RelayControl), and the
// window API's wire format that carries all of these from the tray process, which runs the
// relay, to the window process, which shows them. Fixed and FixedUsage serve prepared figures
// instead (tests, screenshots). It runs in either process and shows nothing.
package source

import (
	"context"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// Source is the relay's read API that the tray and the windows show: a stats snapshot and the
// recent traces. The real one is the app's *proxy.Server (relay.Proxy) in the tray process,
// and the window API's client in the window process; Fixed serves prepared figures.
type Source interface {
	Stats() proxy.Snapshot
	// Traces returns up to limit recent requests, newest first.
	Traces(limit int) []proxy.Trace
}

// Fixed is a Source that always answers the same snapshot and traces (screenshots, tests).
type Fixed struct {
	Snapshot proxy.Snapshot
	Recent   []proxy.Trace
}

// Stats returns the fixed snapshot.
func (f Fixed) Stats() proxy.Snapshot { return f.Snapshot }

// Traces returns up to limit of the fixed traces.
func (f Fixed) Traces(limit int) []proxy.Trace {
	if limit >= 0 && limit < len(f.Recent) {
		return f.Recent[:limit]
	}
	return f.Recent
}

// RecentTraces is how many requests the dashboard lists (and the window API's default).
const RecentTraces = 50

// EverySecond runs f once a second, and at once when poked, until ctx ends: how the tray
// and the open windows follow the relay.
func EverySecond(ctx context.Context, poke <-chan struct{}, f func()) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-poke:
		}
		f()
	}
}

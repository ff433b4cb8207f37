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
	// Changes is the generation of what Stats and Traces answer, and a channel that closes
	// when it changes (proxy.Signal); Follow waits on it.
	Changes() (uint64, <-chan struct{})
}

// Fixed is a Source that always answers the same snapshot and traces (screenshots, tests).
type Fixed struct {
	Snapshot proxy.Snapshot
	Recent   []proxy.Trace
}

// Stats returns the fixed snapshot.
func (f Fixed) Stats() proxy.Snapshot { return f.Snapshot }

// Changes never changes.
func (Fixed) Changes() (uint64, <-chan struct{}) { return Never() }

// Traces returns up to limit of the fixed traces.
func (f Fixed) Traces(limit int) []proxy.Trace {
	if limit >= 0 && limit < len(f.Recent) {
		return f.Recent[:limit]
	}
	return f.Recent
}

// RecentTraces is how many requests the dashboard lists (and the window API's default).
const RecentTraces = 50

// BackgroundCalls is how many of Codex's own calls to the ChatGPT backend (route chatgpt: its
// plugins, its usage once a minute, analytics) the relay keeps beside the requests, in a ring
// of their own (proxy's traceRing: a fifth of its 500 requests).
const BackgroundCalls = 100

// TracesRead is how many traces the dashboard reads: with at most BackgroundCalls of those
// calls among the newest, it still finds RecentTraces requests.
const TracesRead = RecentTraces + BackgroundCalls

// Follow calls show whenever what it shows may have changed, until ctx ends, and otherwise
// sleeps: the tray and the open windows follow the relay this way, and an idle relay costs
// them nothing. It shows at once, then again
//   - when the relay's state changes (changes: Server.Changes, or the window API's), but no
//     sooner than gap after the last show, so that a busy relay is shown a few times a second
//     and not once per request;
//   - at once when poked (an action, a setting, the listener);
//   - when the time show returned comes: what show shows also changes with the clock alone (a
//     rest ends, a usage window resets, an age grows), and show says how long until it next
//     does (0: no such time);
//   - and at the latest every, for what is read on a clock of its own (the usage ledger).
//
// It replaced a once-a-second poll (issue 39).
func Follow(ctx context.Context, changes func() (uint64, <-chan struct{}), poke <-chan struct{}, gap, every time.Duration, show func() time.Duration) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var shown uint64
	var shownAt, next time.Time // next zero: show at once
	for {
		gen, changed := changes()
		now := time.Now()
		if !now.Before(next) || (gen != shown && now.Sub(shownAt) >= gap) {
			shown, shownAt = gen, now
			d := show()
			if d <= 0 || d > every {
				d = every
			}
			next = now.Add(d)
			continue
		}
		wait := next.Sub(now)
		if gen != shown { // shown too recently: show this change after the gap
			wait, changed = min(wait, shownAt.Add(gap).Sub(now)), nil
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-poke:
			next = time.Time{}
		case <-t.C:
		}
	}
}

// Never is a Changes of a source that never changes (Fixed): its channel never closes.
func Never() (uint64, <-chan struct{}) { return 0, nil }

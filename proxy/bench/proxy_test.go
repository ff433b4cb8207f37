package bench_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/bench"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// TestProxyBenchRuns runs `bench proxy` small: every phase must complete without an error and
// report what it measured (the figures themselves depend on the machine and are not checked).
func TestProxyBenchRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few thousand requests")
	}
	started, settled := map[string]int{}, 0
	r, err := bench.Proxy(bench.ProxyOptions{
		SmallRequests: 20, LargeRequests: 2, StreamEvents: 50, Concurrent: 30, LargeConcurrent: 40, Rounds: 2,
		IdleWait: 100 * time.Millisecond, SoakRequests: 1000, ConversationTurns: 6, ConversationRounds: 1,
		ReplayBytes: 256 << 10, Continuations: 4, Uploads: 2, UploadBytes: 1 << 20, UploadFor: 300 * time.Millisecond,
		RemakeTurns: 4, RemakeBytes: 64 << 10,
		// A ledger that counts what its hook saw.
		Ledger: func(dir string) (bench.Ledger, error) {
			var n atomic.Int64
			return bench.Ledger{Hook: func(proxy.Trace) { n.Add(1) }, Flush: func() error { return nil },
				Close: func() (int64, error) { return n.Load(), nil }}, nil
		},
		// "Processes" that run in this process: the phases must go through them.
		StartProcess: func(kind, upstream string) (*bench.Process, error) {
			started[kind]++
			relayKind := kind
			if kind == "bare" {
				relayKind = "relay"
			}
			relay, err := bench.RelayFor(relayKind, upstream)
			if err != nil {
				return nil, err
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			if kind == "bare" {
				srv := &http.Server{Handler: bench.BareProxy(upstream)}
				go func() { srv.Serve(ln); close(done) }()
				return &bench.Process{URL: "http://" + ln.Addr().String() + "/v1", PID: os.Getpid(),
					Stop: func() { srv.Close(); <-done; stop() }}, nil
			}
			go func() { relay.Serve(ctx, ln, time.Second); close(done) }()
			return &bench.Process{URL: "http://" + ln.Addr().String() + "/v1", PID: os.Getpid(),
				Settled: func() (int64, int, error) {
					settled++
					rss, n := bench.Settle(relay)
					return rss, n, nil
				},
				Stop: func() { stop(); <-done }}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The loads' relay and bare proxy, and one relay for each scenario of the budget phase.
	if started["relay"] != 2 || started["bare"] != 1 || started["chat"] != 1 || started["compaction"] != 1 || settled < 6 {
		t.Fatalf("started %v, settled %d times", started, settled)
	}
	for _, l := range []bench.LoadResult{r.Concurrent, r.ConcurrentLarge} {
		// (The bare proxy's errors are its own: it does not retry a POST whose pooled
		// connection the upstream closed. They are reported, not asserted.)
		if !l.RelayProcess || l.Rounds != 2 || l.Errors != 0 || l.PeakRSSBytes <= 0 || l.BarePeakRSSBytes <= 0 || l.PeakToBare <= 0 ||
			l.RSSBeforeBytes <= 0 || l.BareRSSBeforeBytes <= 0 {
			t.Fatalf("load %+v", l)
		}
	}
	if r.Concurrent.Streams != 30 || r.ConcurrentLarge.Streams != 40 || r.Idle.RSSBeforeBytes <= 0 || r.Idle.RSSAfterBytes <= 0 || r.Idle.AfterSeconds < 0.1 {
		t.Fatalf("loads %+v %+v, idle %+v", r.Concurrent, r.ConcurrentLarge, r.Idle)
	}
	if r.Small.DirectP50Us <= 0 || r.Small.RelayP50Us <= 0 {
		t.Fatalf("small %+v", r.Small)
	}
	if r.Large.Bytes != len(testkit.SyntheticResponsesBody(10000)) || r.Large.RelayMs <= 0 || r.Large.ParseBuildMs <= 0 || r.Large.AddedPerPass == 0 {
		t.Fatalf("large %+v", r.Large)
	}
	if r.Stream.Events != 50 {
		t.Fatalf("stream %+v", r.Stream)
	}
	// The hook saw the requests with the ledger on (half of 2 x 20), then the 100000 rows.
	if lg := r.Ledger; lg.Skipped || lg.Requests != 20 || lg.OnP50Us <= 0 || lg.OffP50Us <= 0 || lg.RowsWritten != 100000 || lg.RowsPerSecond <= 0 {
		t.Fatalf("ledger %+v", lg)
	}
	// Both cases of the sealed phase ran (a rotated request whose foreign item was not left out
	// would have been refused), and a remembered item costs its map entry and ring slot.
	if sl := r.Sealed; sl.Requests != 20 || sl.OnP50Us <= 0 || sl.OffP50Us <= 0 || sl.RotatedOnP50Us <= 0 || sl.MultiAgentOnP50Us <= 0 || sl.BytesPerItem <= 8 || sl.BytesPerItem > 200 {
		t.Fatalf("sealed %+v", sl)
	}
	if ro := r.Rotation; ro.StrippedMs <= 0 || ro.PlainMs <= 0 || ro.PassMs <= 0 || ro.Serializations != 1 {
		t.Fatalf("rotation %+v", ro)
	}
	c := r.Conversation
	if c.Turns != 6 || len(c.PerTurn) != 6 || c.LastUploadRatio <= 0 || c.LastUploadRatio >= 0.5 {
		t.Fatalf("conversation %+v", c)
	}
	for i, pt := range c.PerTurn {
		// Over HTTP the whole history goes each turn; over WebSocket only the turn's items.
		if i > 0 && (pt.HTTPUpstreamBytes <= c.PerTurn[i-1].HTTPUpstreamBytes || pt.WSUpstreamBytes > c.PerTurn[0].WSUpstreamBytes+64) {
			t.Fatalf("conversation turn %+v after %+v", pt, c.PerTurn[i-1])
		}
	}
	if r.Soak.Requests != 1000 || r.Soak.RSSAfter1000Bytes <= 0 || r.Soak.RSSAfterAllBytes <= 0 || r.Soak.GoroutinesAfterSoak > r.Soak.GoroutinesIdle {
		t.Fatalf("soak %+v", r.Soak)
	}
	if len(r.Phases) != len(bench.ProxyPhases()) {
		t.Fatalf("phases %v", r.Phases)
	}
	checkBudget(t, r.Budget, true)
}

// TestSocketsBenchRuns runs `bench sockets` small: the attacks complete, the burst is cut by
// the frame budget, every chained turn is answered, every other held socket's turn completes,
// and the figures are reported.
func TestSocketsBenchRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("sends frames of megabytes")
	}
	r, err := bench.Sockets(bench.SocketsOptions{Sockets: 6, FrameBytes: 40 << 20, Turns: 3, Held: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.BurstRefused == 0 || r.ChainAnswers != 3 || r.BaselineRSS <= 0 || r.BurstPeakRSS <= 0 || r.ChainPeakRSS <= 0 || r.AfterRSS <= 0 ||
		r.HeldAnswers != 2 || r.HeldRSS <= 0 || r.HeldPeakRSS <= 0 {
		t.Fatalf("sockets %+v", r)
	}
}

// TestProxyBenchOnly runs one phase of `bench proxy` alone: the others leave their figures
// empty, and an unknown phase is refused before anything runs.
func TestProxyBenchOnly(t *testing.T) {
	r, err := bench.Proxy(bench.ProxyOptions{Only: []string{"stream"}, StreamEvents: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Phases) != 1 || r.Phases[0] != "stream" || r.Stream.Events != 30 || r.Small.RelayP50Us != 0 || r.Soak.Requests != 0 || r.Concurrent.Streams != 0 {
		t.Fatalf("phases %v, stream %+v, small %+v, soak %+v", r.Phases, r.Stream, r.Small, r.Soak)
	}
	if _, err := bench.Proxy(bench.ProxyOptions{Only: []string{"streams"}}); err == nil || !strings.Contains(err.Error(), `no phase "streams"`) {
		t.Fatalf("an unknown phase: %v", err)
	}
}

// checkBudget checks the budget phase's figures at the sizes the tests run it with: every
// client answered 200 or 503 with a Retry-After, the conversation replayed to the Chat account
// for each continuation that got through, and the compaction re-made once for all the turns.
func checkBudget(t *testing.T, b bench.BudgetResult, process bool) {
	t.Helper()
	rp := b.Replay
	if rp.Continuations != 4 || rp.Failed != 0 || rp.Answered+rp.Unavailable != 4 || rp.Answered == 0 || rp.UpstreamRequests != rp.Answered ||
		rp.UpstreamMaxBytes < rp.ConversationBytes*9/10 || rp.ConversationBytes < 256<<10 || rp.PeakRSSBytes <= 0 || rp.SettledRSSBytes <= 0 || rp.RelayProcess != process {
		t.Fatalf("budget replay %+v", rp)
	}
	up := b.Uploads
	if up.Uploads != 2 || up.DeclaredBytes != 1<<20 || up.Requests == 0 || up.Failed != 0 || up.Answered+up.Unavailable != up.Requests ||
		up.MaxMs <= 0 || up.P50Ms > up.MaxMs || up.SentBytes <= 0 || up.UploadStatuses["none"]+up.UploadStatuses["503+retry-after"] != 2 || up.PeakRSSBytes <= 0 {
		t.Fatalf("budget uploads %+v", up)
	}
	rm := b.Remake
	if rm.Turns != 4 || rm.Failed != 0 || rm.Answered+rm.Unavailable != 4 || rm.Answered == 0 || rm.Remakes != 1 ||
		rm.KeptRequestBytes < 32<<10 || rm.PeakRSSBytes <= 0 {
		t.Fatalf("budget re-make %+v", rm)
	}
}

// TestProxyBenchOnlyBudget runs the budget phase alone, its relays in this process: no other
// phase runs (their figures stay empty).
func TestProxyBenchOnlyBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("sends bodies of megabytes")
	}
	r, err := bench.Proxy(bench.ProxyOptions{Only: []string{"budget"},
		ReplayBytes: 256 << 10, Continuations: 4, Uploads: 2, UploadBytes: 1 << 20, UploadFor: 300 * time.Millisecond,
		RemakeTurns: 4, RemakeBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Phases) != 1 || r.Phases[0] != "budget" || r.Small.RelayP50Us != 0 || r.Soak.Requests != 0 || r.Concurrent.Streams != 0 {
		t.Fatalf("phases %v, small %+v, soak %+v", r.Phases, r.Small, r.Soak)
	}
	checkBudget(t, r.Budget, false)
}

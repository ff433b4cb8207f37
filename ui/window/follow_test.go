package window

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/ui/source"
	"github.com/codexrelay/codexrelay/ui/uitest"
)

// liveSource is a tray relay that changes when told: one more request each time.
type liveSource struct {
	sig    proxy.Signal
	mu     sync.Mutex
	snap   proxy.Snapshot
	traces []proxy.Trace // newest first
	read   int64         // the request total the last Stats answered
}

func (l *liveSource) Stats() proxy.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.read = l.snap.Requests.Total
	return l.snap
}

func (l *liveSource) lastRead() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.read
}

func (l *liveSource) Traces(n int) []proxy.Trace {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]proxy.Trace(nil), l.traces[:min(n, len(l.traces))]...)
}

func (l *liveSource) Changes() (uint64, <-chan struct{}) { return l.sig.Changes() }

func (l *liveSource) serve() {
	l.mu.Lock()
	l.snap.Requests.Total++
	id := "req_" + strconv.FormatInt(l.snap.Requests.Total, 10)
	l.traces = append([]proxy.Trace{{ID: id, Model: "gpt-5", Status: 200, Outcome: "completed"}}, l.traces...)
	l.mu.Unlock()
	l.sig.Raise()
}

// requestLog counts the window API requests by path, and keeps the queries of the traces reads.
type requestLog struct {
	mu     sync.Mutex
	paths  map[string]int
	traces []string
	h      http.Handler
}

func (r *requestLog) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.paths[req.URL.Path]++
	if req.URL.Path == "/relay/traces" {
		r.traces = append(r.traces, req.URL.RawQuery)
	}
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

func (r *requestLog) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paths[path]
}

func (r *requestLog) lastTraces() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.traces) == 0 {
		return ""
	}
	return r.traces[len(r.traces)-1]
}

// The window process asks the tray only for what changed (issue 39): with the dashboard open
// and the relay idle it waits on one GET /relay/changes and reads nothing else; a request
// served is one read of the stats and the status and of the traces newer than those it holds;
// a burst of requests is read a few times, not once per request.
func TestTheWindowsAskOnlyForWhatChanged(t *testing.T) {
	src := &liveSource{snap: proxy.Snapshot{Accounts: []proxy.AccountStats{{Name: "work", Kind: proxy.KindOpenAI, State: proxy.StateReady}},
		Catalog: proxy.CatalogStats{AgeMs: -1}}}
	src.serve()
	ctl := &uitest.Control{State: app.ServiceStatus{Addr: "127.0.0.1:7455", Running: true}}
	const token = "the-tray-process-token"
	log := &requestLog{paths: map[string]int{}, h: trayStandIn(src, ctl, nil, token)}
	srv := httptest.NewServer(log)
	defer srv.Close()
	c := newWindowClient(srv.URL, token)

	relay := uitest.Relay(t, nil)
	fa := test.NewTempApp(t)
	u := newWindowsUI(fa, relay.App, slog.New(slog.DiscardHandler), c)
	u.OpenWindow("dashboard")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.follow(ctx) }()
	go func() { defer wg.Done(); u.poll(ctx) }()
	defer func() {
		cancel()
		srv.CloseClientConnections()
		stopped := make(chan struct{})
		go func() { wg.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("the window's follower and loop did not stop within 10 s of the end")
		}
	}()

	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("the first view", func() bool { return log.count("/relay/stats") >= 1 && log.count("/relay/changes") >= 1 })
	time.Sleep(600 * time.Millisecond) // the relay is idle: the windows read nothing more
	// At the start: the window's own view, the loop's first, and the one after the first
	// answer of /relay/changes (the generation the follower did not know yet).
	stats, traces, changes := log.count("/relay/stats"), log.count("/relay/traces"), log.count("/relay/changes")
	if stats > 3 || traces > 3 || changes > 2 {
		t.Fatalf("an idle relay was read %d times (stats), %d (traces), %d (changes)", stats, traces, changes)
	}
	time.Sleep(600 * time.Millisecond)
	if log.count("/relay/stats") != stats || log.count("/relay/traces") != traces || log.count("/relay/status") > stats {
		t.Fatalf("the windows kept reading an idle relay: %v", log.paths)
	}

	src.serve() // req_2
	wait("the change's view", func() bool { return log.count("/relay/traces") > traces })
	if q := log.lastTraces(); q != "after=req_1&limit="+strconv.Itoa(source.TracesRead) {
		t.Fatalf("traces read with %q, want only those after req_1", q)
	}
	wait("both requests listed", func() bool { got := c.Traces(50); return len(got) == 2 && got[0].ID == "req_2" })

	stats = log.count("/relay/stats")
	for range 200 {
		src.serve()
	}
	wait("the burst's last request read", func() bool { return src.lastRead() == 202 })
	if n := log.count("/relay/stats") - stats; n > 6 {
		t.Fatalf("200 requests were read %d times", n)
	}
}

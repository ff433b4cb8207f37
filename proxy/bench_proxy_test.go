package proxy_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// TestProxyBenchRuns runs `bench proxy` small: every phase must complete without an error and
// report what it measured (the figures themselves depend on the machine and are not checked).
func TestProxyBenchRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a few thousand requests")
	}
	started, settled := false, 0
	r, err := proxy.RunProxyBench(proxy.ProxyBenchOptions{
		SmallRequests: 20, LargeRequests: 2, StreamEvents: 50, Concurrent: 30, SoakRequests: 1000,
		// A "relay process" that is a relay in this process: the phases must go through it.
		StartRelay: func(upstream string) (*proxy.RelayProcess, error) {
			started = true
			relay := proxy.BenchRelay(upstream)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { relay.Serve(ctx, ln, time.Second); close(done) }()
			return &proxy.RelayProcess{URL: "http://" + ln.Addr().String() + "/v1", PID: os.Getpid(),
				Settled: func() (int64, int, error) {
					settled++
					rss, n := relay.SettledMemory()
					return rss, n, nil
				},
				Stop: func() { stop(); <-done }}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !started || settled < 3 || !r.Concurrent.RelayProcess || r.Concurrent.Streams != 30 || r.Concurrent.Errors != 0 || r.Concurrent.PeakRSSBytes <= 0 {
		t.Fatalf("concurrent %+v", r.Concurrent)
	}
	if r.Small.DirectP50Us <= 0 || r.Small.RelayP50Us <= 0 {
		t.Fatalf("small %+v", r.Small)
	}
	if r.Large.Bytes != len(payload.SyntheticResponsesBody(10000)) || r.Large.RelayMs <= 0 || r.Large.ParseBuildMs <= 0 || r.Large.AddedPerPass == 0 {
		t.Fatalf("large %+v", r.Large)
	}
	if r.Stream.Events != 50 {
		t.Fatalf("stream %+v", r.Stream)
	}
	if r.Soak.Requests != 1000 || r.Soak.RSSAfter1000Bytes <= 0 || r.Soak.RSSAfterAllBytes <= 0 || r.Soak.GoroutinesAfterSoak > r.Soak.GoroutinesIdle {
		t.Fatalf("soak %+v", r.Soak)
	}
}

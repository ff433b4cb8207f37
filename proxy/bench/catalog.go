package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
)

// CatalogOptions configure Catalog (the synthetic benchmark the README describes).
type CatalogOptions struct {
	Samples    int           // groups of concurrent requests
	Concurrent int           // requests per group
	Delay      time.Duration // simulated discovery time
}

// CatalogSide is one variant's preparation wait, over every request of every sample.
type CatalogSide struct {
	MedianMs          float64 `json:"medianMs"`
	P95Ms             float64 `json:"p95Ms"`
	Refreshes         int64   `json:"refreshes,omitempty"`
	ExpectedRefreshes int64   `json:"expectedRefreshes,omitempty"`
}

// CatalogResult is what `codexrelay bench catalog --json` prints.
type CatalogResult struct {
	Samples                           int         `json:"samples"`
	ConcurrentRequests                int         `json:"concurrentRequests"`
	SimulatedCatalogProbeMs           float64     `json:"simulatedCatalogProbeMs"`
	Baseline                          CatalogSide `json:"baseline"`
	Candidate                         CatalogSide `json:"candidate"`
	MedianPreparationImprovementRatio float64     `json:"medianPreparationImprovementRatio"`
}

// Catalog measures the model-resolution wait of requests that find the catalog expired:
// Concurrent requests at once, Samples times, against a discovery that takes Delay. The
// baseline blocks on the refresh; the candidate serves the stale catalog while it refreshes in
// the background. Only the local wait is measured, not the model's latency.
func Catalog(opt CatalogOptions) CatalogResult {
	if opt.Samples <= 0 {
		opt.Samples = 50
	}
	if opt.Concurrent <= 0 {
		opt.Concurrent = 8
	}
	if opt.Delay < 0 {
		opt.Delay = 0
	}
	run := func(swr bool) (waits []float64, refreshes int64) {
		var clock atomic.Int64
		clock.Store(time.Date(2026, 7, 30, 12, 0, 0, 0, time.UTC).UnixNano())
		var calls atomic.Int64
		var discovering sync.WaitGroup
		s := proxy.New(proxy.Options{Now: func() time.Time { return time.Unix(0, clock.Load()) },
			Catalog: proxy.CatalogOptions{TTL: 10 * time.Minute, StaleMaxAge: 30 * time.Minute, StaleWhileRevalidate: swr, RefreshInterval: -1,
				Discover: func(ctx context.Context, a proxy.Account) ([]proxy.Discovered, error) {
					discovering.Add(1)
					defer discovering.Done()
					calls.Add(1)
					time.Sleep(opt.Delay)
					return []proxy.Discovered{{ID: "gpt-5-codex"}}, nil
				}}})
		s.SetAccounts([]proxy.Account{{Name: "bench", Kind: proxy.KindOpenAI, BaseURL: "http://bench.invalid", Credentials: proxy.Static{}}})
		s.Resolve(context.Background(), "gpt-5-codex") // the first catalog
		calls.Store(0)
		for k := range opt.Samples {
			clock.Add(int64(11 * time.Minute)) // past the TTL, within the stale maximum
			var wg sync.WaitGroup
			var mu sync.Mutex
			start := make(chan struct{})
			for range opt.Concurrent {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					t0 := time.Now()
					s.Resolve(context.Background(), "gpt-5-codex")
					d := ms(time.Since(t0))
					mu.Lock()
					waits = append(waits, d)
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			// Let the sample's refresh (started in the background by the candidate) finish
			// before the next sample; one that never starts shows in the refresh count.
			for deadline := time.Now().Add(opt.Delay + 2*time.Second); calls.Load() <= int64(k) && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			discovering.Wait()
		}
		return waits, calls.Load()
	}
	base, baseRefreshes := run(false)
	cand, candRefreshes := run(true)
	r := CatalogResult{
		Samples: opt.Samples, ConcurrentRequests: opt.Concurrent, SimulatedCatalogProbeMs: ms(opt.Delay),
		Baseline:  CatalogSide{MedianMs: quantile(base, 0.5), P95Ms: quantile(base, 0.95)},
		Candidate: CatalogSide{MedianMs: quantile(cand, 0.5), P95Ms: quantile(cand, 0.95)},
	}
	r.Baseline.Refreshes = baseRefreshes
	r.Candidate.Refreshes = candRefreshes
	r.Candidate.ExpectedRefreshes = int64(opt.Samples)
	if r.Baseline.MedianMs > 0 {
		r.MedianPreparationImprovementRatio = 1 - r.Candidate.MedianMs/r.Baseline.MedianMs
	}
	return r
}

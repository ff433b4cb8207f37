package proxy

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// CatalogBenchOptions configure RunCatalogBench (seed 001's synthetic benchmark).
type CatalogBenchOptions struct {
	Samples    int           // groups of concurrent requests
	Concurrent int           // requests per group
	Delay      time.Duration // simulated discovery time
}

// CatalogBenchSide is one variant's preparation wait, over every request of every sample.
type CatalogBenchSide struct {
	MedianMs          float64 `json:"medianMs"`
	P95Ms             float64 `json:"p95Ms"`
	Refreshes         int64   `json:"refreshes,omitempty"`
	ExpectedRefreshes int64   `json:"expectedRefreshes,omitempty"`
}

// CatalogBenchResult is what `codexrelay bench catalog --json` prints.
type CatalogBenchResult struct {
	Samples                           int              `json:"samples"`
	ConcurrentRequests                int              `json:"concurrentRequests"`
	SimulatedCatalogProbeMs           float64          `json:"simulatedCatalogProbeMs"`
	Baseline                          CatalogBenchSide `json:"baseline"`
	Candidate                         CatalogBenchSide `json:"candidate"`
	MedianPreparationImprovementRatio float64          `json:"medianPreparationImprovementRatio"`
}

// RunCatalogBench measures the model-resolution wait of requests that find the catalog expired:
// Concurrent requests at once, Samples times, against a discovery that takes Delay. The
// baseline blocks on the refresh; the candidate serves the stale catalog while it refreshes in
// the background. Only the local wait is measured, not the model's latency.
func RunCatalogBench(opt CatalogBenchOptions) CatalogBenchResult {
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
		s := New(Options{Now: func() time.Time { return time.Unix(0, clock.Load()) },
			Catalog: CatalogOptions{TTL: 10 * time.Minute, StaleMaxAge: 30 * time.Minute, StaleWhileRevalidate: swr, RefreshInterval: -1}})
		s.SetAccounts([]Account{{Name: "bench", Kind: KindOpenAI, BaseURL: "http://bench.invalid", Credentials: Static{}}})
		var calls atomic.Int64
		s.catalog.discover = func(ctx context.Context, m *member) ([]Discovered, error) {
			calls.Add(1)
			time.Sleep(opt.Delay)
			return []Discovered{{ID: "gpt-5-codex"}}, nil
		}
		s.catalog.wait(context.Background()) // the first catalog
		calls.Store(0)
		for range opt.Samples {
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
					s.catalog.resolve(context.Background())
					d := ms(time.Since(t0))
					mu.Lock()
					waits = append(waits, d)
					mu.Unlock()
				}()
			}
			close(start)
			wg.Wait()
			s.catalog.settle() // let a background refresh finish before the next sample
		}
		return waits, calls.Load()
	}
	base, baseRefreshes := run(false)
	cand, candRefreshes := run(true)
	r := CatalogBenchResult{
		Samples: opt.Samples, ConcurrentRequests: opt.Concurrent, SimulatedCatalogProbeMs: ms(opt.Delay),
		Baseline:  CatalogBenchSide{MedianMs: quantile(base, 0.5), P95Ms: quantile(base, 0.95)},
		Candidate: CatalogBenchSide{MedianMs: quantile(cand, 0.5), P95Ms: quantile(cand, 0.95)},
	}
	r.Baseline.Refreshes = baseRefreshes
	r.Candidate.Refreshes = candRefreshes
	r.Candidate.ExpectedRefreshes = int64(opt.Samples)
	if r.Baseline.MedianMs > 0 {
		r.MedianPreparationImprovementRatio = 1 - r.Candidate.MedianMs/r.Baseline.MedianMs
	}
	return r
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	k := int(q*float64(len(xs))+0.999999999) - 1
	return xs[min(max(k, 0), len(xs)-1)]
}

package bench

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// SerializationOptions configure Serialization. Zero or negative fields take the defaults of
// the measurement the README reproduces: 500 samples, 10,000 input items, 3 attempts.
type SerializationOptions struct{ Samples, Items, Attempts int }

// SerializationSide is the measurement of one side (baseline or candidate) of the benchmark.
type SerializationSide struct {
	FullSerializations int     `json:"fullSerializations"` // misses + direct builds in one sample
	MedianMs           float64 `json:"medianMs"`
	P95Ms              float64 `json:"p95Ms"`
}

// SerializationResult is what `codexrelay bench serialization --json` prints; times are in
// milliseconds.
type SerializationResult struct {
	Samples         int `json:"samples"`
	InputItems      int `json:"inputItems"`
	Attempts        int `json:"attempts"`
	SerializedBytes int `json:"serializedBytes"`

	Baseline  SerializationSide `json:"baseline"`
	Candidate SerializationSide `json:"candidate"`

	MedianImprovementRatio     float64 `json:"medianImprovementRatio"`     // 1 - candidate/baseline median
	SingleAttemptOverheadMs    float64 `json:"singleAttemptOverheadMs"`    // median(1 attempt cached) - median(1 attempt uncached)
	SingleAttemptOverheadRatio float64 `json:"singleAttemptOverheadRatio"` // SingleAttemptOverheadMs / median(1 attempt uncached)
	SubsequentAttemptCostRatio float64 `json:"subsequentAttemptCostRatio"` // median cost of a cache hit / median full build
	ParseBuildMBps             float64 `json:"parseBuildMBps"`             // bytes / median time of one Parse+Build pass
}

// Serialization measures the per-request serialization cache (the serialization cache) against direct
// serialization on a synthetic Codex body, reproducing the original measurement: per sample, Attempts account attempts of the same
// request (same overrides each time) through an uncached Cache (baseline) and through a fresh
// Cache (candidate). Baseline and candidate samples are interleaved, alternating which side
// runs first, after a warm-up.
func Serialization(opt SerializationOptions) SerializationResult {
	if opt.Samples <= 0 {
		opt.Samples = 500
	}
	if opt.Items <= 0 {
		opt.Items = 10000
	}
	if opt.Attempts <= 0 {
		opt.Attempts = 3
	}
	body := testkit.SyntheticResponsesBody(opt.Items)
	o, err := payload.Parse(body)
	if err != nil {
		panic("bench: the synthetic body does not parse: " + err.Error())
	}
	// What routing adds for an account; built once, outside the timings.
	sb := serialBench{o: o, ov: []payload.Override{{Key: "store", Value: []byte("false")}, {Key: "stream", Value: []byte("true")}}}
	// The collector runs between samples, never inside one (pair).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for k := range min(opt.Samples, 20) { // warm-up
		sb.pair(k, opt.Attempts)
	}
	var base, cand []float64
	for k := range opt.Samples {
		b, c := sb.pair(k, opt.Attempts)
		base, cand = append(base, b), append(cand, c)
	}
	// The one-attempt overhead is the median of paired differences: each pair runs back to
	// back, so slow drifts of the machine cancel out. The difference is tiny against the
	// noise of one sample, so this takes four times as many samples.
	var base1, diff1 []float64
	for k := range 4 * opt.Samples {
		b, c := sb.pair(k, 1)
		base1, diff1 = append(base1, b), append(diff1, c-b)
	}
	hits, builds := sb.hitCost(opt.Samples)
	pass := PassMs(body, opt.Samples)

	r := SerializationResult{
		Samples:         opt.Samples,
		InputItems:      opt.Items,
		Attempts:        opt.Attempts,
		SerializedBytes: len(payload.Build(nil, o, sb.ov)),
		Baseline:        SerializationSide{sb.count(payload.NewUncached(), opt.Attempts), quantile(base, 0.5), quantile(base, 0.95)},
		Candidate:       SerializationSide{sb.count(payload.NewCache(), opt.Attempts), quantile(cand, 0.5), quantile(cand, 0.95)},
	}
	r.MedianImprovementRatio = ratio(r.Baseline.MedianMs-r.Candidate.MedianMs, r.Baseline.MedianMs)
	b1 := quantile(base1, 0.5)
	r.SingleAttemptOverheadMs = quantile(diff1, 0.5)
	r.SingleAttemptOverheadRatio = ratio(r.SingleAttemptOverheadMs, b1)
	r.SubsequentAttemptCostRatio = ratio(quantile(hits, 0.5), quantile(builds, 0.5))
	if pass > 0 {
		r.ParseBuildMBps = float64(len(body)) / 1e6 / (pass / 1e3)
	}
	return r
}

// serialBench is the request Serialization builds the bodies of: the synthetic body, parsed,
// and what routing adds for an account.
type serialBench struct {
	o  *payload.Object
	ov []payload.Override
}

// run performs the attempts of one request through c and returns the elapsed milliseconds.
func (sb serialBench) run(c *payload.Cache, attempts int) float64 {
	start := time.Now()
	for range attempts {
		_ = c.Body(sb.o, "input", sb.ov) // Go never drops a call that is not known to be pure
	}
	return ms(time.Since(start))
}

// pair measures one baseline and one candidate sample, in alternating order. The collector
// runs between samples, never inside one: otherwise a collection triggered by earlier
// samples' 1 MB allocations lands inside one side's timing at random and its noise is larger
// than the differences measured here.
func (sb serialBench) pair(k, attempts int) (base, cand float64) {
	if k%8 == 0 {
		runtime.GC()
	}
	if k%2 == 0 {
		base = sb.run(payload.NewUncached(), attempts)
		cand = sb.run(payload.NewCache(), attempts)
	} else {
		cand = sb.run(payload.NewCache(), attempts)
		base = sb.run(payload.NewUncached(), attempts)
	}
	return base, cand
}

// hitCost is the cost of a hit on a warm cache, against a full build through an uncached
// cache, samples times each.
func (sb serialBench) hitCost(samples int) (hits, builds []float64) {
	warm := payload.NewCache()
	warm.Body(sb.o, "input", sb.ov)
	for k := range samples {
		if k%8 == 0 {
			runtime.GC()
		}
		hits = append(hits, sb.run(warm, 1))
		builds = append(builds, sb.run(payload.NewUncached(), 1))
	}
	return hits, builds
}

// count is the full serializations of one sample, counted by the cache itself.
func (sb serialBench) count(c *payload.Cache, attempts int) int {
	sb.run(c, attempts)
	s := c.Stats()
	return s.Misses + s.Direct
}

// PassMs is the median time in milliseconds of samples passes of PassOnce, the collector
// running between every eight of them, as in Serialization. This is the unit of the relay
// benchmark's target for a large request.
func PassMs(body []byte, samples int) float64 {
	var passes []float64
	for k := range samples {
		if k%8 == 0 {
			runtime.GC()
		}
		passes = append(passes, PassOnce(body))
	}
	return quantile(passes, 0.5)
}

// PassOnce times in milliseconds one pass of everything a request's body costs the relay
// when it is serialized: Parse, then Build with an account's overrides into a new buffer, with
// the collector paused.
func PassOnce(body []byte) float64 {
	ov := []payload.Override{{Key: "store", Value: []byte("false")}, {Key: "stream", Value: []byte("true")}}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	start := time.Now()
	p, err := payload.Parse(body)
	if err != nil {
		panic("bench: the benchmark body does not parse: " + err.Error())
	}
	_ = payload.Build(nil, p, ov) // Go never drops a call that is not known to be pure
	return ms(time.Since(start))
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

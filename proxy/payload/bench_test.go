package payload

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestSyntheticResponsesBody(t *testing.T) {
	body := SyntheticResponsesBody(10000)
	if d := math.Abs(float64(len(body))-1159229) / 1159229; d > 0.02 {
		t.Fatalf("body is %d bytes, want about 1,159,229", len(body))
	}
	checkOracle(t, body)
	var req struct {
		Model, Instructions, PromptCacheKey string
		Store, Stream                       *bool
		Tools                               []struct{ Type, Name string }
		Reasoning                           map[string]string
		Include                             []string
		Input                               []struct{ Type, Role string }
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if req.Model == "" || req.Instructions == "" || len(req.Tools) < 2 || req.Reasoning["effort"] == "" ||
		req.Store == nil || *req.Store || req.Stream == nil || !*req.Stream || len(req.Include) == 0 {
		t.Fatalf("missing Codex fields: %+v", req)
	}
	if len(req.Input) != 10000 {
		t.Fatalf("%d input items, want 10000", len(req.Input))
	}
	kinds := map[string]int{}
	for _, it := range req.Input {
		kinds[it.Type+"/"+it.Role]++
	}
	for _, k := range []string{"message/user", "message/assistant", "function_call/", "function_call_output/"} {
		if kinds[k] == 0 {
			t.Errorf("no %s item", k)
		}
	}
	if string(SyntheticResponsesBody(10000)) != string(body) {
		t.Fatal("synthetic body is not deterministic")
	}
}

func TestRunBenchSmall(t *testing.T) {
	// 1000 items is above DirectBelow, so the candidate caches.
	r := RunBench(BenchOptions{Samples: 3, Items: 1000, Attempts: 3})
	if r.Samples != 3 || r.InputItems != 1000 || r.Attempts != 3 {
		t.Fatalf("options not echoed: %+v", r)
	}
	if r.Baseline.FullSerializations != 3 || r.Candidate.FullSerializations != 1 {
		t.Fatalf("full serializations = %d/%d, want 3/1", r.Baseline.FullSerializations, r.Candidate.FullSerializations)
	}
	o, err := Parse(SyntheticResponsesBody(1000))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Build(nil, o, accountOverrides)); r.SerializedBytes != want {
		t.Fatalf("SerializedBytes = %d, want %d", r.SerializedBytes, want)
	}
	for name, v := range map[string]float64{"baseline median": r.Baseline.MedianMs, "baseline p95": r.Baseline.P95Ms,
		"candidate median": r.Candidate.MedianMs, "candidate p95": r.Candidate.P95Ms, "MB/s": r.ParseBuildMBps} {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %v", name, v)
		}
	}
	if r.Baseline.P95Ms < r.Baseline.MedianMs || r.Candidate.P95Ms < r.Candidate.MedianMs {
		t.Errorf("p95 below median: %+v", r)
	}
	// A body under DirectBelow is never cached: every attempt is a direct serialization.
	small := RunBench(BenchOptions{Samples: 1, Items: 10, Attempts: 2})
	if small.Baseline.FullSerializations != 2 || small.Candidate.FullSerializations != 2 {
		t.Fatalf("small body: full serializations = %d/%d, want 2/2", small.Baseline.FullSerializations, small.Candidate.FullSerializations)
	}
	r0 := RunBench(BenchOptions{Samples: 1, Items: 700, Attempts: 0})
	if r0.Attempts != 3 {
		t.Fatalf("default attempts = %d", r0.Attempts)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	if m, p := quantile(xs, 0.5), quantile(xs, 0.95); m != 5 || p != 10 {
		t.Fatalf("median %v p95 %v", m, p)
	}
	if quantile(nil, 0.5) != 0 || quantile([]float64{3}, 0.95) != 3 {
		t.Fatal("edge cases")
	}
}

// benchBody is the size of the original measurement: 10,000 items, about 1.16 MB.
var benchBody = SyntheticResponsesBody(10000)

func BenchmarkParse(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	o := mustParse(b, string(benchBody))
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		benchSink += len(Build(nil, o, accountOverrides))
	}
}

func BenchmarkParseBuild(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		o, err := Parse(benchBody)
		if err != nil {
			b.Fatal(err)
		}
		benchSink += len(Build(nil, o, accountOverrides))
	}
}

// BenchmarkCacheHit measures a subsequent attempt: variant key + lookup. Bytes are those of the
// body served, so MB/s compares directly with BenchmarkBuild.
func BenchmarkCacheHit(b *testing.B) {
	o := mustParse(b, string(benchBody))
	c := NewCache()
	c.Body(o, "input", accountOverrides)
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		benchSink += len(c.Body(o, "input", accountOverrides))
	}
	if c.Stats().Misses != 1 {
		b.Fatalf("stats = %+v", c.Stats())
	}
}

// BenchmarkParseNonASCII parses a body whose strings are mostly multi-byte UTF-8.
func BenchmarkParseNonASCII(b *testing.B) {
	body := []byte(strings.ReplaceAll(string(benchBody), "router", "маршрутизатор 路由器"))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJSONValid is the encoding/json reference for BenchmarkParse.
func BenchmarkJSONValid(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	for b.Loop() {
		if !json.Valid(benchBody) {
			b.Fatal("invalid")
		}
	}
}

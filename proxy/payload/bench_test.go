package payload

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

func TestSyntheticResponsesBody(t *testing.T) {
	body := testkit.SyntheticResponsesBody(10000)
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
	if string(testkit.SyntheticResponsesBody(10000)) != string(body) {
		t.Fatal("synthetic body is not deterministic")
	}
}

// benchSink keeps the compiler from discarding benchmarked work.
var benchSink int

// benchBody is the size of the original measurement: 10,000 items, about 1.16 MB.
var benchBody = testkit.SyntheticResponsesBody(10000)

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

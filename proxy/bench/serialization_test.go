package bench_test

import (
	"math"
	"testing"

	"github.com/codexrelay/codexrelay/proxy/bench"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

func TestSerializationSmall(t *testing.T) {
	// 1000 items is above DirectBelow, so the candidate caches.
	r := bench.Serialization(bench.SerializationOptions{Samples: 3, Items: 1000, Attempts: 3})
	if r.Samples != 3 || r.InputItems != 1000 || r.Attempts != 3 {
		t.Fatalf("options not echoed: %+v", r)
	}
	if r.Baseline.FullSerializations != 3 || r.Candidate.FullSerializations != 1 {
		t.Fatalf("full serializations = %d/%d, want 3/1", r.Baseline.FullSerializations, r.Candidate.FullSerializations)
	}
	o, err := payload.Parse(testkit.SyntheticResponsesBody(1000))
	if err != nil {
		t.Fatal(err)
	}
	if want := len(payload.Build(nil, o, []payload.Override{{Key: "store", Value: []byte("false")}, {Key: "stream", Value: []byte("true")}})); r.SerializedBytes != want {
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
	small := bench.Serialization(bench.SerializationOptions{Samples: 1, Items: 10, Attempts: 2})
	if small.Baseline.FullSerializations != 2 || small.Candidate.FullSerializations != 2 {
		t.Fatalf("small body: full serializations = %d/%d, want 2/2", small.Baseline.FullSerializations, small.Candidate.FullSerializations)
	}
	r0 := bench.Serialization(bench.SerializationOptions{Samples: 1, Items: 700, Attempts: 0})
	if r0.Attempts != 3 {
		t.Fatalf("default attempts = %d", r0.Attempts)
	}
}
